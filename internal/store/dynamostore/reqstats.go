package dynamostore

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/secureai-gateway/gateway/internal/reqstats"
)

// The request counts over time (reqstats) live in the limits table, beside the per-key windows:
// the same shape (an additive counter per time bucket, expiring through TTLAttribute), and every
// function that counts requests already has UpdateItem on it, the admin functions BatchGetItem.
// One item per resolution and bucket start, pk "stats#requests#<minute|hour>#<unix start>" (a
// key id never starts so), with one number attribute per surface and outcome ("openai_served", …).
// A flush is one UpdateItem ADD per bucket, concurrently; a read one BatchGetItem per 100 buckets.

const reqStatsPrefix = "stats#requests#"

func reqStatsPK(res reqstats.Resolution, start time.Time) string {
	return reqStatsPrefix + res.String() + "#" + strconv.FormatInt(start.Unix(), 10)
}

func reqStatsAttr(s reqstats.Surface, o reqstats.Outcome) string {
	return s.String() + "_" + o.String()
}

// AddRequestStats implements reqstats.Store: one UpdateItem per bucket, all at once.
func (s *Store) AddRequestStats(ctx context.Context, bs []reqstats.Bucket) error {
	errs := make([]error, len(bs))
	var wg sync.WaitGroup
	for i := range bs {
		wg.Go(func() { errs[i] = s.addRequestStats(ctx, &bs[i]) })
	}
	wg.Wait()
	var failed []reqstats.Bucket
	for i, err := range errs {
		if err != nil {
			failed = append(failed, bs[i])
		}
	}
	switch {
	case len(failed) == 0:
		return nil
	case len(failed) == len(bs):
		return errors.Join(errs...)
	}
	return &reqstats.PartialError{Failed: failed, Err: errors.Join(errs...)}
}

func (s *Store) addRequestStats(ctx context.Context, b *reqstats.Bucket) error {
	names := map[string]string{"#ttl": TTLAttribute}
	values := map[string]types.AttributeValue{":ttl": TTL(b.Expires())}
	expr := "ADD "
	for sf := range b.N {
		for o, n := range b.N[sf] {
			if n == 0 {
				continue
			}
			id := strconv.Itoa(sf*10 + o)
			if len(values) > 1 {
				expr += ", "
			}
			expr += "#n" + id + " :n" + id
			names["#n"+id] = reqStatsAttr(reqstats.Surface(sf), reqstats.Outcome(o))
			values[":n"+id] = &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
		}
	}
	if len(values) == 1 {
		return nil // nothing to add
	}
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.tables.Limits),
		Key:                       map[string]types.AttributeValue{attrLimitPK: &types.AttributeValueMemberS{Value: reqStatsPK(b.Res, b.Start)}},
		UpdateExpression:          aws.String(expr + " SET #ttl = :ttl"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	if err != nil {
		return &OpError{Op: "UpdateItem", Table: s.tables.Limits, Err: err}
	}
	return nil
}

// RequestStats implements reqstats.Store: the range's buckets read by key, 100 to a BatchGetItem.
func (s *Store) RequestStats(ctx context.Context, res reqstats.Resolution, from, to time.Time) ([]reqstats.Bucket, error) {
	d := res.Duration()
	var keys []map[string]types.AttributeValue
	for t := from.UTC().Truncate(d); t.Before(to); t = t.Add(d) {
		if t.Before(from) {
			continue
		}
		keys = append(keys, map[string]types.AttributeValue{attrLimitPK: &types.AttributeValueMemberS{Value: reqStatsPK(res, t)}})
	}
	byStart := map[int64]reqstats.Counts{}
	for len(keys) > 0 {
		n := min(len(keys), maxBatchGet)
		items, err := s.batchGet(ctx, s.tables.Limits, keys[:n])
		if err != nil {
			return nil, err
		}
		keys = keys[n:]
		for _, it := range items {
			start, counts, err := decodeReqStats(res, it)
			if err != nil {
				return nil, &OpError{Op: "BatchGetItem", Table: s.tables.Limits, Err: err}
			}
			byStart[start] = counts
		}
	}
	out := make([]reqstats.Bucket, 0, len(byStart))
	for t := from.UTC().Truncate(d); t.Before(to); t = t.Add(d) {
		if n, ok := byStart[t.Unix()]; ok && !t.Before(from) {
			out = append(out, reqstats.Bucket{Res: res, Start: t, N: n})
		}
	}
	return out, nil
}

func decodeReqStats(res reqstats.Resolution, it map[string]types.AttributeValue) (int64, reqstats.Counts, error) {
	var n reqstats.Counts
	pk, _ := it[attrLimitPK].(*types.AttributeValueMemberS)
	prefix := reqStatsPrefix + res.String() + "#"
	if pk == nil || len(pk.Value) <= len(prefix) {
		return 0, n, errors.New("request stats item without its key")
	}
	start, err := strconv.ParseInt(pk.Value[len(prefix):], 10, 64)
	if err != nil {
		return 0, n, errors.New("request stats item " + pk.Value + ": malformed key")
	}
	for sf := range n {
		for o := range n[sf] {
			name := reqStatsAttr(reqstats.Surface(sf), reqstats.Outcome(o))
			v, ok := it[name].(*types.AttributeValueMemberN)
			if !ok {
				continue
			}
			if n[sf][o], err = strconv.ParseInt(v.Value, 10, 64); err != nil {
				return 0, n, errors.New("request stats item " + pk.Value + ": " + name + " is not a number")
			}
		}
	}
	return start, n, nil
}

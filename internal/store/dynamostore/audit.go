package dynamostore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/secureai-gateway/gateway/internal/audit"
)

// The audit table is partitioned by UTC day and sorted by audit.Entry.SortKey, so a date range is
// a few Query calls walked newest first, and a cursor (a sort key) names its day. Filters are
// FilterExpressions on copies of the filtered fields; the entry itself is one JSON attribute.

const dayLayout = "20060102"

// AuditLog returns the store's audit log (audit.Store).
func (s *Store) AuditLog() audit.Store { return auditLog{s: s, now: time.Now} }

type auditLog struct {
	s   *Store
	now func() time.Time
}

// Put implements audit.Store: a conditional put, so a redelivered event writes nothing.
func (l auditLog) Put(ctx context.Context, e audit.Entry, expires time.Time) (bool, error) {
	raw, err := json.Marshal(e)
	if err != nil {
		return false, err
	}
	str := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	item := map[string]types.AttributeValue{
		attrAuditPK:       str(e.Timestamp.UTC().Format(dayLayout)),
		attrAuditSK:       str(e.SortKey()),
		attrAuditEntry:    str(string(raw)),
		attrAuditSearch:   str(e.SearchText()),
		attrAuditType:     str(string(e.Type)),
		attrAuditSeverity: str(e.Severity),
		attrAuditUserID:   str(e.User.ID),
		attrAuditAPIKeyID: str(e.Metadata.APIKeyID),
		TTLAttribute:      TTL(expires),
	}
	err = l.s.putIf(ctx, l.s.tables.Audit, item, expression.AttributeNotExists(expression.Name(attrAuditSK)))
	if ConditionFailed(err) {
		return false, nil
	}
	return err == nil, err
}

func (l auditLog) filter(q audit.Query) expression.ConditionBuilder {
	c := NotExpired(l.now())
	eq := func(attr, v string) {
		if v != "" {
			c = c.And(expression.Name(attr).Equal(expression.Value(v)))
		}
	}
	eq(attrAuditType, string(q.Type))
	eq(attrAuditSeverity, q.Severity)
	eq(attrAuditUserID, q.UserID)
	eq(attrAuditAPIKeyID, q.APIKeyID)
	if q.Search != "" {
		c = c.And(expression.Contains(expression.Name(attrAuditSearch), q.Search))
	}
	return c
}

// Query implements audit.Store. It reads one entry past the page to know whether there is a next.
func (l auditLog) Query(ctx context.Context, q audit.Query) (audit.Page, error) {
	lo, hi := q.Bounds()
	var page audit.Page
	if hi <= lo {
		return page, nil
	}
	first, err := time.Parse(dayLayout, lo[:len(dayLayout)])
	if err != nil {
		return page, err
	}
	for day, _ := time.Parse(dayLayout, hi[:len(dayLayout)]); !day.Before(first); day = day.AddDate(0, 0, -1) {
		expr, err := expression.NewBuilder().WithFilter(l.filter(q)).WithKeyCondition(
			expression.Key(attrAuditPK).Equal(expression.Value(day.Format(dayLayout))).
				And(expression.Key(attrAuditSK).Between(expression.Value(lo), expression.Value(hi)))).Build()
		if err != nil {
			return page, fmt.Errorf("dynamostore: %w", err)
		}
		pages := dynamodb.NewQueryPaginator(l.s.db, &dynamodb.QueryInput{
			TableName:                 aws.String(l.s.tables.Audit),
			KeyConditionExpression:    expr.KeyCondition(),
			FilterExpression:          expr.Filter(),
			ExpressionAttributeNames:  expr.Names(),
			ExpressionAttributeValues: expr.Values(),
			ScanIndexForward:          aws.Bool(false),
			Limit:                     aws.Int32(int32(q.Limit + 1)),
		})
		for pages.HasMorePages() {
			out, err := pages.NextPage(ctx)
			if err != nil {
				return page, &OpError{Op: "Query", Table: l.s.tables.Audit, Err: err}
			}
			for _, item := range out.Items {
				if sk, _ := item[attrAuditSK].(*types.AttributeValueMemberS); sk == nil || sk.Value >= hi {
					continue // Between is inclusive; hi is the previous page's last entry or the range's end
				}
				if len(page.Entries) == q.Limit {
					page.Next = audit.Cursor(&page.Entries[len(page.Entries)-1])
					return page, nil
				}
				raw, _ := item[attrAuditEntry].(*types.AttributeValueMemberS)
				if raw == nil {
					return page, fmt.Errorf("dynamostore: audit item without %s", attrAuditEntry)
				}
				var e audit.Entry
				if err := json.Unmarshal([]byte(raw.Value), &e); err != nil {
					return page, fmt.Errorf("dynamostore: corrupt audit entry: %w", err)
				}
				page.Entries = append(page.Entries, e)
			}
		}
	}
	return page, nil
}

package cloudbench

import (
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"

	"github.com/tidwall/gjson"
)

// Operation names the AWS call an SDK request makes: the X-Amz-Target header of the JSON
// protocols (DynamoDB, EventBridge, Secrets Manager, SQS), such as
// DynamoDB_20120810.TransactWriteItems; else the Action parameter of the query protocol (form
// body or URL); else the method and path.
func Operation(h http.Header, rawQuery string, body []byte) string {
	if t := h.Get("X-Amz-Target"); t != "" {
		return t
	}
	if q, err := url.ParseQuery(rawQuery); err == nil && q.Get("Action") != "" {
		return q.Get("Action")
	}
	if strings.HasPrefix(h.Get("Content-Type"), "application/x-www-form-urlencoded") {
		if q, err := url.ParseQuery(string(body)); err == nil && q.Get("Action") != "" {
			return q.Get("Action")
		}
	}
	return "" // the caller names it by method and path
}

// Resources names what a JSON-protocol call touches, sorted and without repeats: its TableName,
// the tables of a batch or a transaction, a SecretId, a queue (the last part of its QueueUrl) or
// the event bus of PutEvents entries.
func Resources(body []byte) []string {
	var out []string
	add := func(s string) {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	j := gjson.ParseBytes(body)
	add(j.Get("TableName").Str)
	add(j.Get("SecretId").Str)
	if q := j.Get("QueueUrl").Str; q != "" {
		add(path.Base(q))
	}
	j.Get("RequestItems").ForEach(func(k, _ gjson.Result) bool { add(k.Str); return true })
	for _, item := range j.Get("TransactItems").Array() {
		item.ForEach(func(_, v gjson.Result) bool { add(v.Get("TableName").Str); return true })
	}
	for _, e := range j.Get("Entries").Array() {
		add(e.Get("EventBusName").Str)
	}
	slices.Sort(out)
	return out
}

// ShortOp drops the service prefix of an X-Amz-Target: DynamoDB_20120810.GetItem → GetItem.
func ShortOp(op string) string {
	if _, name, ok := strings.Cut(op, "."); ok {
		return name
	}
	return op
}

// IsDynamoDB reports whether op is a DynamoDB operation.
func IsDynamoDB(op string) bool { return strings.HasPrefix(op, "DynamoDB_") }

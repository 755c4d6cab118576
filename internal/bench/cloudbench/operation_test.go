package cloudbench

import (
	"net/http"
	"slices"
	"testing"
)

func TestOperationNamesTheCall(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header http.Header
		query  string
		body   string
		want   string
	}{
		{"a JSON protocol call by its X-Amz-Target", http.Header{"X-Amz-Target": {"DynamoDB_20120810.TransactWriteItems"}}, "", `{}`, "DynamoDB_20120810.TransactWriteItems"},
		{"EventBridge", http.Header{"X-Amz-Target": {"AWSEvents.PutEvents"}}, "", `{}`, "AWSEvents.PutEvents"},
		{"a query protocol call by its form Action", http.Header{"Content-Type": {"application/x-www-form-urlencoded; charset=utf-8"}}, "", "Action=SendMessage&Version=2012-11-05", "SendMessage"},
		{"a query protocol call by its URL Action", http.Header{}, "Action=ReceiveMessage", "", "ReceiveMessage"},
		{"nothing to go by", http.Header{}, "", `{"TableName":"t"}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Operation(tc.header, tc.query, []byte(tc.body)); got != tc.want {
				t.Errorf("Operation = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestResourcesNameTablesSecretsQueuesAndBuses(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"a table", `{"TableName":"keys","Key":{}}`, []string{"keys"}},
		{"a batch's tables", `{"RequestItems":{"b":{},"a":{}}}`, []string{"a", "b"}},
		{"a transaction's tables, once each", `{"TransactItems":[{"Update":{"TableName":"limits"}},{"Update":{"TableName":"users"}},{"Put":{"TableName":"limits"}}]}`, []string{"limits", "users"}},
		{"a secret", `{"SecretId":"arn:aws:secretsmanager:us-east-1:1:secret:s"}`, []string{"arn:aws:secretsmanager:us-east-1:1:secret:s"}},
		{"a queue", `{"QueueUrl":"http://127.0.0.1:1/123456789012/outbox"}`, []string{"outbox"}},
		{"a bus", `{"Entries":[{"EventBusName":"bus"},{"EventBusName":"bus"}]}`, []string{"bus"}},
		{"not JSON", `Action=SendMessage`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Resources([]byte(tc.body)); !slices.Equal(got, tc.want) {
				t.Errorf("Resources = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestShortOpDropsTheServicePrefix(t *testing.T) {
	if got := ShortOp("DynamoDB_20120810.GetItem"); got != "GetItem" {
		t.Errorf("ShortOp = %q", got)
	}
	if got := ShortOp("SendMessage"); got != "SendMessage" {
		t.Errorf("ShortOp = %q", got)
	}
}

package dynamostore

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/smithy-go"
	"github.com/secureai-gateway/gateway/internal/fault"
)

// An AccessDenied from DynamoDB is the deployment's fault: a 500 naming the call, the table and
// the missing permission in its cause, not a 503 that callers retry for ever.
func TestARefusedRoleIsAConfigurationError(t *testing.T) {
	for _, tc := range []struct {
		code string
		kind fault.Kind // Internal answers 500, Unavailable 503 (httpapi.Status)
		fix  string
	}{
		{"AccessDeniedException", fault.Internal, "the function's role lacks dynamodb:TransactWriteItems on table limits"},
		{"ResourceNotFoundException", fault.Internal, "found no table limits"},
		{"ProvisionedThroughputExceededException", fault.Unavailable, ""},
	} {
		err := &OpError{Op: "TransactWriteItems", Table: "limits", Err: &smithy.GenericAPIError{Code: tc.code, Message: "no"}}
		e := fault.Dependency("the request limit store", "try again", err)
		if got := e.K; got != tc.kind || !strings.Contains(err.Fix(), tc.fix) || (tc.fix == "") != (err.Fix() == "") {
			t.Errorf("%s: kind %v, fix %q; want %v and a fix containing %q", tc.code, got, err.Fix(), tc.kind, tc.fix)
		}
		if tc.fix != "" && !strings.Contains(e.Err.Error(), tc.fix) {
			t.Errorf("%s: cause %q does not name the fix", tc.code, e.Err)
		}
	}
	if (&OpError{Op: "GetItem", Table: "t", Err: errors.New("dial tcp: refused")}).Fix() != "" {
		t.Error("a network failure was taken for a misconfiguration")
	}
}

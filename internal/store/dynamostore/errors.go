package dynamostore

import (
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

var (
	// ErrExists is returned when a create would overwrite an item (for keys: an equal secret hash).
	ErrExists = errors.New("dynamostore: item already exists")
	// ErrConflict is returned when an optimistic update kept losing to concurrent writers; the
	// caller may retry the whole operation.
	ErrConflict = errors.New("dynamostore: item changed concurrently, try again")
)

// OpError wraps an error from DynamoDB with the operation and table it came from, so a log line
// says what failed without the caller adding context.
type OpError struct {
	Op    string // GetItem, PutItem, Query, Scan, ...
	Table string
	Err   error
}

func (e *OpError) Error() string {
	return fmt.Sprintf("dynamostore: %s %s: %v", e.Op, e.Table, e.Err)
}

func (e *OpError) Unwrap() error { return e.Err }

// misconfigured are the DynamoDB errors that blame the deployment: no retry mends them.
var misconfigured = map[string]string{
	"AccessDeniedException":               "the function's role lacks dynamodb:%s on table %s",
	"UnrecognizedClientException":         "DynamoDB refused the function's credentials (%s on table %s)",
	"MissingAuthenticationTokenException": "DynamoDB received no credentials (%s on table %s)",
	"ResourceNotFoundException":           "%s found no table %s: check the function's SECUREAI_TABLE_* setting",
}

// Fix implements fault.Misconfiguration: what to change when DynamoDB refused the call for a
// reason of the deployment's, "" otherwise.
func (e *OpError) Fix() string {
	var api smithy.APIError
	if !errors.As(e.Err, &api) {
		return ""
	}
	if f, ok := misconfigured[api.ErrorCode()]; ok {
		return fmt.Sprintf(f, e.Op, e.Table)
	}
	return ""
}

// ConditionFailed reports whether err (possibly wrapped) is DynamoDB rejecting a write because its
// condition expression did not hold. Callers map it to a domain error (ErrExists, ErrConflict…).
func ConditionFailed(err error) bool {
	var cf *types.ConditionalCheckFailedException
	return errors.As(err, &cf)
}

// errUnexplained is a transaction cancelled without a reason the store can act on.
var errUnexplained = errors.New("dynamostore: transaction cancelled for no reason it names")

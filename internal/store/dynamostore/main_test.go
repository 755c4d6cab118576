package dynamostore_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
)

// moto_server is shared by the package's tests and stopped when they end.
func TestMain(m *testing.M) { testenv.Main(m) }

// newClient is built once per test, as a Lambda builds it once at init.
func newClient(t *testing.T) *dynamodb.Client {
	return dynamodb.NewFromConfig(testenv.AWSConfig(t, testenv.Moto(t)))
}

package dynamostore

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The governance tables (issue 11), each keyed by one string attribute and expiring through TTL:
// receipts at the end of their retention, breakers at the end of their cooldown, violation
// counters at the end of their window.
const (
	attrReceiptPK = "bundleId"
	attrBreakerPK = "pk"
)

func governanceDefinitions(t Tables) []tableDef {
	var defs []tableDef
	for _, tbl := range []struct{ name, pk string }{{t.Receipts, attrReceiptPK}, {t.CircuitBreakers, attrBreakerPK}} {
		if tbl.name == "" {
			continue
		}
		defs = append(defs, tableDef{
			input: &dynamodb.CreateTableInput{
				TableName:            aws.String(tbl.name),
				BillingMode:          types.BillingModePayPerRequest,
				AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(tbl.pk), AttributeType: types.ScalarAttributeTypeS}},
				KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(tbl.pk), KeyType: types.KeyTypeHash}},
			},
			ttlAttribute: TTLAttribute,
		})
	}
	return defs
}

package dynamostore

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Attribute names of the limits table: partition key pk = limits.Window.ID (key id, period and
// window start), the count, and TTLAttribute set to the window's end plus a day.
const (
	attrLimitPK    = "pk"
	attrLimitCount = "count"
)

// Attribute names of the users table: partition key id, plus billing.User's fields under their
// JSON names and recordVersion for optimistic admin edits.
const attrUserID = "id"

// accountDefinitions are the tables of limits and billing, each only when named.
func accountDefinitions(t Tables) []tableDef {
	var defs []tableDef
	if t.Limits != "" {
		defs = append(defs, tableDef{input: hashKeyTable(t.Limits, attrLimitPK), ttlAttribute: TTLAttribute})
	}
	if t.Users != "" {
		defs = append(defs, tableDef{input: hashKeyTable(t.Users, attrUserID)})
	}
	return defs
}

// hashKeyTable is an on-demand table keyed by one string attribute.
func hashKeyTable(name, key string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(key), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(key), KeyType: types.KeyTypeHash}},
	}
}

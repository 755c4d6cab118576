package dynamostore

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Attribute names of the webhook and audit tables (template.yaml declares the same).
const (
	attrWebhookID      = "id"         // webhooks: partition key
	attrAttemptsPK     = "endpointId" // webhook attempts: partition key
	attrAttemptsSK     = "sk"         // webhook attempts: time#delivery#attempt, newest last
	attrAuditPK        = "day"        // audit: the entry's UTC day, YYYYMMDD
	attrAuditSK        = "sk"         // audit: audit.Entry.SortKey (time#event id)
	attrRecordVersion  = "recordVersion"
	attrAuditEntry     = "entry"      // audit: the entry as JSON
	attrAuditSearch    = "searchText" // audit: audit.Entry.SearchText
	attrAuditType      = "type"
	attrAuditSeverity  = "severity"
	attrAuditUserID    = "userId"
	attrAuditAPIKeyID  = "apiKeyId"
	attrWebhookPayload = "endpoint" // webhooks: the endpoint as JSON
)

func stringKeyTable(name, pk, sk string, ttl bool) tableDef {
	in := &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(pk), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(pk), KeyType: types.KeyTypeHash}},
	}
	if sk != "" {
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(sk), AttributeType: types.ScalarAttributeTypeS})
		in.KeySchema = append(in.KeySchema, types.KeySchemaElement{AttributeName: aws.String(sk), KeyType: types.KeyTypeRange})
	}
	def := tableDef{input: in}
	if ttl {
		def.ttlAttribute = TTLAttribute
	}
	return def
}

// eventTables are the tables of webhooks and the audit log that t names.
func eventTables(t Tables) []tableDef {
	var defs []tableDef
	if t.Webhooks != "" {
		defs = append(defs, stringKeyTable(t.Webhooks, attrWebhookID, "", false))
	}
	if t.WebhookAttempts != "" {
		defs = append(defs, stringKeyTable(t.WebhookAttempts, attrAttemptsPK, attrAttemptsSK, true))
	}
	if t.Audit != "" {
		defs = append(defs, stringKeyTable(t.Audit, attrAuditPK, attrAuditSK, true))
	}
	return defs
}

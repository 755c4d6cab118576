package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// This file is the single written-down schema of the gateway's DynamoDB tables. template.yaml
// declares the same tables for the cloud; keep the two in step (attribute names, key schema,
// indexes, TTL attribute). CreateTables uses these definitions for tests and local runs.

// Attribute and index names of the API keys table.
const (
	attrKeyHash    = "hash"          // partition key: hex SHA-256 of the secret (the auth hot path)
	attrKeyID      = "id"            // the key's public id, indexed by indexKeysByID
	attrKeyVersion = "recordVersion" // optimistic-concurrency counter, never shown to callers
	indexKeysByID  = "byId"          // GSI id → hash, KEYS_ONLY: the mapping never changes
)

// Attribute names of the idempotency table (its records expire through TTLAttribute).
const attrIdempotencyPK = "pk"

// Tables names the physical tables, which differ per stage and per test.
type Tables struct {
	APIKeys     string // required
	Idempotency string // optional: "" when this deployment keeps no idempotency records
	Limits      string // optional: request counters (limits.Counter), one item per key and window
	Users       string // optional: users' billing records (billing.Store)
	// Receipts and CircuitBreakers are optional (governance_schema.go).
	Receipts        string
	CircuitBreakers string
	// Webhooks, WebhookAttempts and Audit are optional: "" when this function does not use them.
	Webhooks        string
	WebhookAttempts string
	Audit           string
	// ProviderHealth is optional (health.go): each instance's report of the models it saw fail,
	// shared by the instances that run chains.
	ProviderHealth string
}

// Validate reports a missing required table name.
func (t Tables) Validate() error {
	if t.APIKeys == "" {
		return errors.New("dynamostore: no API keys table name (Tables.APIKeys)")
	}
	return nil
}

// tableDef is one table's schema plus what CreateTableInput cannot say.
type tableDef struct {
	input        *dynamodb.CreateTableInput
	ttlAttribute string // "" when the table's items never expire
}

// definitions returns every table's schema. Keys carry no TTL: revoked and expired keys stay for
// audit. Tables whose records do expire (idempotency, …) set ttlAttribute to TTLAttribute.
func definitions(t Tables) []tableDef {
	defs := []tableDef{{
		input: &dynamodb.CreateTableInput{
			TableName:   aws.String(t.APIKeys),
			BillingMode: types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{
				{AttributeName: aws.String(attrKeyHash), AttributeType: types.ScalarAttributeTypeS},
				{AttributeName: aws.String(attrKeyID), AttributeType: types.ScalarAttributeTypeS},
			},
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(attrKeyHash), KeyType: types.KeyTypeHash},
			},
			GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
				IndexName:  aws.String(indexKeysByID),
				KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String(attrKeyID), KeyType: types.KeyTypeHash}},
				Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
			}},
		},
	}}
	if t.Idempotency != "" {
		defs = append(defs, tableDef{
			input: &dynamodb.CreateTableInput{
				TableName:   aws.String(t.Idempotency),
				BillingMode: types.BillingModePayPerRequest,
				AttributeDefinitions: []types.AttributeDefinition{
					{AttributeName: aws.String(attrIdempotencyPK), AttributeType: types.ScalarAttributeTypeS},
				},
				KeySchema: []types.KeySchemaElement{
					{AttributeName: aws.String(attrIdempotencyPK), KeyType: types.KeyTypeHash},
				},
			},
			ttlAttribute: TTLAttribute,
		})
	}
	defs = append(defs, accountDefinitions(t)...)
	defs = append(defs, governanceDefinitions(t)...)
	if t.ProviderHealth != "" {
		defs = append(defs, stringKeyTable(t.ProviderHealth, attrHealthPK, attrHealthSK, true))
	}
	return append(defs, eventTables(t)...)
}

// CreateTables creates the tables (skipping ones that already exist), waits until they are
// active and turns on TTL where the schema has one. It is for tests and local use; in the cloud
// the SAM template owns the tables.
func CreateTables(ctx context.Context, client *dynamodb.Client, t Tables) error {
	if err := t.Validate(); err != nil {
		return err
	}
	for _, def := range definitions(t) {
		name := aws.ToString(def.input.TableName)
		_, err := client.CreateTable(ctx, def.input)
		var inUse *types.ResourceInUseException
		if err != nil && !errors.As(err, &inUse) {
			return &OpError{Op: "CreateTable", Table: name, Err: err}
		}
		waiter := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
			o.MinDelay = 100 * time.Millisecond
			o.MaxDelay = time.Second
		})
		if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 2*time.Minute); err != nil {
			return &OpError{Op: "DescribeTable", Table: name, Err: fmt.Errorf("waiting for table: %w", err)}
		}
		if def.ttlAttribute == "" {
			continue
		}
		if err := enableTTL(ctx, client, name, def.ttlAttribute); err != nil {
			return err
		}
	}
	return nil
}

// enableTTL turns TTL on unless it already is: DynamoDB rejects enabling it twice, and asking
// first avoids telling that refusal apart by its message.
func enableTTL(ctx context.Context, client *dynamodb.Client, table, attr string) error {
	desc, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil {
		return &OpError{Op: "DescribeTimeToLive", Table: table, Err: err}
	}
	if d := desc.TimeToLiveDescription; d != nil && aws.ToString(d.AttributeName) == attr &&
		(d.TimeToLiveStatus == types.TimeToLiveStatusEnabled || d.TimeToLiveStatus == types.TimeToLiveStatusEnabling) {
		return nil
	}
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(attr), Enabled: aws.Bool(true),
		},
	})
	if err != nil {
		return &OpError{Op: "UpdateTimeToLive", Table: table, Err: err}
	}
	return nil
}

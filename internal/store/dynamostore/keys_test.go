package dynamostore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/store/dynamostore"
)

// DynamoDB-specific behaviour beyond the shared contract: typed errors and the item's shape.

func testKey(t *testing.T) *apikey.Key {
	t.Helper()
	secret := apikey.NewSecret()
	hash, err := apikey.Hash(secret)
	if err != nil {
		t.Fatal(err)
	}
	return &apikey.Key{ID: apikey.NewID(), Hash: hash, Prefix: apikey.Prefix(secret), Name: "t",
		AllowedModels: []string{"demo/fast"}, CreatedAt: time.Now().UTC()}
}

func TestCreateKeyDuplicateIsErrExists(t *testing.T) {
	s := newStore(t, newClient(t))
	k := testKey(t)
	if err := s.CreateKey(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	dup := testKey(t)
	dup.Hash = k.Hash
	if err := s.CreateKey(context.Background(), dup); !errors.Is(err, dynamostore.ErrExists) {
		t.Fatalf("duplicate CreateKey = %v, want dynamostore.ErrExists", err)
	}
}

func TestMissingTableIsOpError(t *testing.T) {
	s := dynamostore.New(newClient(t), dynamostore.Tables{APIKeys: "no-such-table-" + apikey.NewID()})
	_, err := s.KeyByHash(context.Background(), testKey(t).Hash)
	var op *dynamostore.OpError
	if !errors.As(err, &op) || op.Op != "GetItem" || errors.Is(err, apikey.ErrNotFound) {
		t.Fatalf("KeyByHash on a missing table = %v, want an *OpError for GetItem (not ErrNotFound)", err)
	}
	var notFound *types.ResourceNotFoundException
	if !errors.As(err, &notFound) {
		t.Errorf("the AWS error is not reachable through errors.As: %v", err)
	}
}

func TestTablesValidate(t *testing.T) {
	if err := (dynamostore.Tables{Idempotency: "i"}).Validate(); err == nil {
		t.Error("Validate without an API keys table succeeded")
	}
	if err := (dynamostore.Tables{APIKeys: "k"}).Validate(); err != nil {
		t.Errorf("Validate with only the required table: %v", err)
	}
}

func TestCreateTablesTwice(t *testing.T) {
	client := newClient(t)
	s, tables := newStoreTables(t, client)
	k := testKey(t)
	if err := s.CreateKey(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	// Running it again (a second local start) must neither fail, nor lose items, nor trip over
	// the TTL already enabled on the idempotency table.
	if err := dynamostore.CreateTables(context.Background(), client, tables); err != nil {
		t.Fatalf("CreateTables on existing tables: %v", err)
	}
	if _, err := s.KeyByHash(context.Background(), k.Hash); err != nil {
		t.Fatalf("key lost after CreateTables: %v", err)
	}
	ttl, err := client.DescribeTimeToLive(context.Background(), &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(tables.Idempotency)})
	if err != nil {
		t.Fatal(err)
	}
	if d := ttl.TimeToLiveDescription; d == nil || aws.ToString(d.AttributeName) != dynamostore.TTLAttribute ||
		d.TimeToLiveStatus != types.TimeToLiveStatusEnabled {
		t.Errorf("idempotency table TTL = %+v, want enabled on %q", d, dynamostore.TTLAttribute)
	}
}

// TestKeyItemShape pins the stored attributes the SAM template, IAM policies and operators rely
// on: the hash is the partition key, the id feeds the byId index, lists are native lists.
func TestKeyItemShape(t *testing.T) {
	client := newClient(t)
	s, tables := newStoreTables(t, client)
	k := testKey(t)
	if err := s.CreateKey(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	out, err := client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(tables.APIKeys),
		Key:       map[string]types.AttributeValue{"hash": &types.AttributeValueMemberS{Value: k.Hash}},
	})
	if err != nil || out.Item == nil {
		t.Fatalf("GetItem by hash: %v (item %v)", err, out.Item)
	}
	if id, ok := out.Item["id"].(*types.AttributeValueMemberS); !ok || id.Value != k.ID {
		t.Errorf("id attribute = %#v, want %q", out.Item["id"], k.ID)
	}
	if _, ok := out.Item["allowedModels"].(*types.AttributeValueMemberL); !ok {
		t.Errorf("allowedModels attribute = %#v, want a list", out.Item["allowedModels"])
	}
	if _, ok := out.Item["createdAt"].(*types.AttributeValueMemberS); !ok {
		t.Errorf("createdAt attribute = %#v, want an RFC 3339 string", out.Item["createdAt"])
	}
}

package dynamostore

import (
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/secureai-gateway/gateway/internal/apikey"
)

// A key item holds apikey.Key's fields as native attributes named by their JSON tags (the names
// the admin API shows), plus the secret's hash, which the JSON form hides, and recordVersion.
// Using the JSON names means a field added to apikey.Key is stored without touching this file.

func jsonTags(o *attributevalue.EncoderOptions)       { o.TagKey = "json" }
func jsonTagsDecode(o *attributevalue.DecoderOptions) { o.TagKey = "json" }

func encodeKey(k *apikey.Key, version int64) (map[string]types.AttributeValue, error) {
	item, err := attributevalue.MarshalMapWithOptions(k, jsonTags)
	if err != nil {
		return nil, fmt.Errorf("dynamostore: encoding key %s: %w", k.ID, err)
	}
	item[attrKeyHash] = &types.AttributeValueMemberS{Value: k.Hash}
	item[attrKeyVersion] = &types.AttributeValueMemberN{Value: strconv.FormatInt(version, 10)}
	return item, nil
}

func decodeKey(item map[string]types.AttributeValue) (*apikey.Key, int64, error) {
	var k apikey.Key
	if err := attributevalue.UnmarshalMapWithOptions(item, &k, jsonTagsDecode); err != nil {
		return nil, 0, fmt.Errorf("dynamostore: corrupt key item: %w", err)
	}
	if err := attributevalue.Unmarshal(item[attrKeyHash], &k.Hash); err != nil {
		return nil, 0, fmt.Errorf("dynamostore: corrupt key item %s: hash: %w", k.ID, err)
	}
	var version int64
	if av, ok := item[attrKeyVersion]; ok {
		if err := attributevalue.Unmarshal(av, &version); err != nil {
			return nil, 0, fmt.Errorf("dynamostore: corrupt key item %s: version: %w", k.ID, err)
		}
	}
	return &k, version, nil
}

package dynamostore

import (
	"reflect"
	"strings"
	"testing"

	"github.com/secureai-gateway/gateway/internal/apikey"
)

// TestKeyFieldsDoNotShadowStoreAttributes guards against a field added to apikey.Key under a JSON
// name the store uses for itself, which would silently overwrite the partition key or version.
func TestKeyFieldsDoNotShadowStoreAttributes(t *testing.T) {
	for f := range reflect.TypeFor[apikey.Key]().Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		if name == attrKeyHash || name == attrKeyVersion {
			t.Errorf("apikey.Key.%s is stored as %q, which the DynamoDB store reserves", f.Name, name)
		}
	}
}

package awssecrets_test

import (
	"testing"

	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
)

// moto_server is shared by the package's tests and stopped when they end.
func TestMain(m *testing.M) { testenv.Main(m) }

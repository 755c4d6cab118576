package testenv_test

import (
	"testing"

	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

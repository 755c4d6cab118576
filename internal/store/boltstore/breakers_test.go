package boltstore_test

import (
	"testing"

	"github.com/secureai-gateway/gateway/internal/breaker"
	"github.com/secureai-gateway/gateway/internal/sharedhealth"
	"github.com/secureai-gateway/gateway/internal/testkit/storetest"
)

func TestBreakersContract(t *testing.T) {
	storetest.RunBreakers(t, func(t *testing.T) breaker.Store { return openStore(t) })
}

func TestHealthContract(t *testing.T) {
	storetest.RunHealth(t, func(t *testing.T) sharedhealth.Store { return openStore(t) })
}

package main

import (
	"errors"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/envvar"
)

func TestBodyLimitsFromTheEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		want    httpapi.BodyLimits
		badName string // the variable a refusal must name
	}{
		{name: "defaults", env: nil,
			want: httpapi.BodyLimits{ReadTimeout: httpapi.DefaultBodyReadTimeout, InflightBytes: httpapi.DefaultInflightBodyBytes, Wait: httpapi.DefaultBodyWait}},
		{name: "set", env: map[string]string{"SECUREAI_BODY_READ_TIMEOUT": "45s", "SECUREAI_MAX_INFLIGHT_BODY_BYTES": "1048576"},
			want: httpapi.BodyLimits{ReadTimeout: 45 * time.Second, InflightBytes: 1 << 20, Wait: httpapi.DefaultBodyWait}},
		{name: "a timeout without a unit", env: map[string]string{"SECUREAI_BODY_READ_TIMEOUT": "30"}, badName: "SECUREAI_BODY_READ_TIMEOUT"},
		{name: "a zero budget", env: map[string]string{"SECUREAI_MAX_INFLIGHT_BODY_BYTES": "0"}, badName: "SECUREAI_MAX_INFLIGHT_BODY_BYTES"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := bodyLimits(envvar.New(func(k string) string { return tc.env[k] }))
			var bad *envvar.Error
			switch {
			case tc.badName != "":
				if !errors.As(err, &bad) || bad.Name != tc.badName {
					t.Errorf("err = %v, want one naming %s", err, tc.badName)
				}
			case err != nil || got != tc.want:
				t.Errorf("bodyLimits = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// The server sets the limits a production Go server sets, and no whole-request ReadTimeout (it
// would cancel long streams; the body's read time is bounded by httpapi.BodyLimits).
func TestServerLimits(t *testing.T) {
	srv := newServer(nil, 5*time.Minute)
	if srv.ReadHeaderTimeout <= 0 || srv.IdleTimeout <= 0 || srv.MaxHeaderBytes <= 0 || srv.WriteTimeout <= 5*time.Minute {
		t.Errorf("server = header timeout %v, idle %v, max header %d, write %v; want all set, write past the budget",
			srv.ReadHeaderTimeout, srv.IdleTimeout, srv.MaxHeaderBytes, srv.WriteTimeout)
	}
	if srv.ReadTimeout != 0 {
		t.Errorf("ReadTimeout = %v, want 0", srv.ReadTimeout)
	}
}

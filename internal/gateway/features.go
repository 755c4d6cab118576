package gateway

import (
	"time"

	"github.com/secureai-gateway/gateway/internal/reqstats"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/api/webhookadmin"
	"github.com/secureai-gateway/gateway/internal/audit"
	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/breaker"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/emit"
	"github.com/secureai-gateway/gateway/internal/event"
	"github.com/secureai-gateway/gateway/internal/keyadmin"
	"github.com/secureai-gateway/gateway/internal/ledger"
	"github.com/secureai-gateway/gateway/internal/limits"
	"github.com/secureai-gateway/gateway/internal/metrics"
	"github.com/secureai-gateway/gateway/internal/receipt"
	"github.com/secureai-gateway/gateway/internal/webhook"
)

// Stores are what a deployment keeps its features' records in, and where their changes go. The
// local server passes its embedded store for each, a Lambda function the DynamoDB tables its
// environment names, cmd/admin the key and user stores alone; Attach builds the same features
// from whichever it is given, so no place assembles a feature its own way. A nil store leaves its
// features off.
type Stores struct {
	// Keys and Users together turn on key and user administration (Deps.KeyAdmin).
	Keys keyadmin.KeyStore
	// Users holds quotas and spend (Deps.Billing, and the ledger's charges).
	Users billing.Store
	// Counter counts requests in their limit windows (Deps.Limits, and the ledger's admission).
	Counter limits.Counter
	// Books is where the ledger admits and settles requests, over Counter, Users and Receipts
	// (nil: no ledger).
	Books ledger.Store
	// HoldMargin is how long past its deadline an unsettled reservation stays held (0: the
	// ledger's default).
	HoldMargin time.Duration
	Receipts   receipt.Store
	// Breakers keeps the circuit breakers, configured by BreakerConfig.
	Breakers      breaker.Store
	BreakerConfig breaker.Config
	// Webhooks and AuditLog turn on the webhook and audit-log administration, with the Dispatcher
	// that sends its test deliveries and the Guard that checks webhook URLs.
	Webhooks   webhook.Store
	AuditLog   audit.Store
	Dispatcher *webhook.Dispatcher
	Guard      webhook.URLChecker
	// Events receives every completion's events, admin change and breaker transition
	// (event.Discard: none are kept).
	Events event.Publisher
	// Metrics counts completions and breaker openings (Prometheus locally, EMF records in the
	// cloud); nil: nothing is counted.
	Metrics metrics.Recorder
	// Invalidate drops a changed key from this process's key cache; nil: nothing caches keys.
	Invalidate func(hash string)
	// Requests counts completed chat requests in memory (its owner flushes it to RequestStats,
	// which the admin API reads); nil: not counted.
	Requests     *reqstats.Counter
	RequestStats reqstats.Store
}

// Attach builds the features from s onto d, under d's catalog (which models and SMLTP policies
// exist) and logger: what hears every completion (its events and metrics), request limits,
// billing, the ledger, receipts, circuit breakers, key and user administration with every rule
// the admin API has, and the webhook and audit-log administration.
func (d *Deps) Attach(s Stores) error {
	policies, err := Policies(d.Catalog)
	if err != nil {
		return err
	}
	events := s.Events
	if events == nil {
		events = event.Discard{}
	}
	// Attach runs once per process (per warm instance in the cloud): its limit windows are the
	// process's.
	observers := completion.Observers{emit.Observer{Publisher: events, Now: time.Now, Limits: &emit.LimitWindows{}}}
	if s.Metrics != nil {
		// Counted under catalog names: a name an any_model provider admits is the caller's choice.
		observers = append(observers, metrics.Catalogued(s.Metrics, d.Catalog))
	}
	d.Observer = observers
	if s.Counter != nil {
		d.Limits = &limits.Limiter{Counter: s.Counter}
	}
	if s.Users != nil {
		d.Billing = &billing.Biller{Store: s.Users}
	}
	if s.Receipts != nil {
		d.Receipts = s.Receipts
	}
	if s.Books != nil {
		d.Ledger = &ledger.Ledger{Store: s.Books, Limits: s.Counter != nil, Biller: d.Billing, HoldMargin: s.HoldMargin}
		if d.Billing != nil {
			d.Ledger.Crossed = emit.Thresholds(events, time.Now)
		}
	}
	if s.Breakers != nil {
		audit := emit.Breakers(events)
		if s.Metrics != nil {
			audit = metrics.BreakerAudit(s.Metrics, audit)
		}
		d.Breakers = breaker.New(s.Breakers, s.BreakerConfig, audit)
	}
	if s.Keys != nil && s.Users != nil {
		cat := d.Catalog
		d.KeyAdmin = &keyadmin.Service{Keys: s.Keys, Users: s.Users,
			ModelExists:  func(name string) bool { _, ok := cat.Models[name]; return ok },
			PolicyExists: func(name string) bool { _, err := policies.Lookup(name); return err == nil },
			Audit:        emit.AdminChanges(events, time.Now, httpapi.Logger(d.Log)),
			Invalidate:   s.Invalidate}
	}
	d.RequestCounter, d.RequestStats = s.Requests, s.RequestStats
	if s.Webhooks != nil && s.AuditLog != nil {
		d.Webhooks = &webhookadmin.Handlers{Webhooks: s.Webhooks, Dispatcher: s.Dispatcher, Guard: s.Guard,
			Audit: s.AuditLog, Events: events, Now: time.Now}
	}
	return nil
}

// Command admin manages a gateway's API keys and users' billing records directly in its store —
// the DynamoDB tables of a deployed stack, or the local embedded store — starting with the first
// admin key that every admin API call needs. Its admin service is the admin API's, assembled by
// the same builder (gateway.Deps.Attach): the same rules and the same audit events. For DynamoDB it uses the AWS default credential chain; the local store
// can only be opened while the local gateway is stopped (use the admin API while it runs).
//
//	go run ./cmd/admin create-key -table <ApiKeysTable> -users-table <UsersTable> -event-bus <EventBus> -name ops -admin
//	go run ./cmd/admin create-key -db .secureai/gateway.db -name app -user team-a -per-minute 30 -daily 500 \
//	    -models openai/gpt-5-nano,anthropic/claude-sonnet-4 -defaults openai/gpt-5-nano,anthropic/claude-sonnet-4
//	go run ./cmd/admin set-user -db .secureai/gateway.db -id team-a -points 2000 -renewal-day 1 -usage-by-model=true -dollar-limit 50 -budget-thresholds 50,80,100
//	go run ./cmd/admin list-keys -db .secureai/gateway.db
//	go run ./cmd/admin revoke-key -db .secureai/gateway.db -id key_0123456789abcdef
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awseventbridge "github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/aws/awsclient"
	"github.com/secureai-gateway/gateway/internal/aws/eventbridge"
	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/envvar"
	"github.com/secureai-gateway/gateway/internal/event"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/gateway"
	"github.com/secureai-gateway/gateway/internal/keyadmin"
	"github.com/secureai-gateway/gateway/internal/local/localevents"
	"github.com/secureai-gateway/gateway/internal/store/boltstore"
	"github.com/secureai-gateway/gateway/internal/store/dynamostore"
	"github.com/secureai-gateway/gateway/internal/webhook"
)

const usage = `usage: admin <command> [store flags] [flags]

commands:
  create-key   create an API key; prints its secret once
  list-keys    list every key (never a secret)
  revoke-key   revoke a key by id (-id)
  set-user     create or change a user's billing record (-id)
  create-user  the same as set-user
  rotate-signing-key  make a new signing key current; old tokens and receipts keep verifying

store flags (one of):
  -db PATH              the local embedded store (default $SECUREAI_DATA_DIR/gateway.db, .secureai/gateway.db)
  -table NAME           the stack's ApiKeysTable ($SECUREAI_TABLE_API_KEYS), with
  -users-table NAME     the stack's UsersTable ($SECUREAI_TABLE_USERS)
  -event-bus NAME       with -table: the stack's event bus ($SECUREAI_EVENT_BUS), so each change is audited

Every change is checked as the admin API checks it (the models and SMLTP policies of the catalog:
built-in, $SECUREAI_CONFIG, and the demo models when $SECUREAI_DEMO is on — by default locally)
and audited as it audits it (an admin event: the local store's audit log, or the bus).

run "admin <command> -h" for a command's flags`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	err := run(context.Background(), os.Args[1], os.Args[2:], os.Stdout)
	var fe *fault.Error
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
		os.Exit(2)
	case errors.As(err, &fe) && fe.Param != "" && !strings.HasPrefix(fe.Message, fe.Param):
		fmt.Fprintf(os.Stderr, "admin: %s: %s\n", fe.Param, fe.Message)
		os.Exit(1)
	default:
		fmt.Fprintln(os.Stderr, "admin:", err)
		os.Exit(1)
	}
}

// run executes one command against the store its flags name.
func run(ctx context.Context, cmd string, args []string, out io.Writer) error {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	db := fs.String("db", "", "the local embedded store file")
	table := fs.String("table", os.Getenv("SECUREAI_TABLE_API_KEYS"), "the stack's ApiKeysTable")
	usersTable := fs.String("users-table", os.Getenv("SECUREAI_TABLE_USERS"), "the stack's UsersTable")
	bus := fs.String("event-bus", os.Getenv("SECUREAI_EVENT_BUS"), "the stack's event bus, where each change's audit event goes (DynamoDB only)")
	var do func(*keyadmin.Service) error
	switch cmd {
	case "create-key":
		do = createKey(ctx, fs, out)
	case "list-keys":
		do = listKeys(ctx, out)
	case "revoke-key":
		id := fs.String("id", "", "the key's id (key_…)")
		do = func(s *keyadmin.Service) error {
			k, err := s.Revoke(ctx, *id)
			if err == nil {
				fmt.Fprintf(out, "Revoked %s (%s) at %s.\n", k.ID, k.Name, k.RevokedAt.Format(time.RFC3339))
			}
			return err
		}
	case "set-user", "create-user":
		do = setUser(ctx, fs, out)
	case "rotate-signing-key":
		return rotateSigningKey(args)
	default:
		return fmt.Errorf("unknown command %q\n%s", cmd, usage)
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	svc, done, err := service(ctx, *db, *table, *usersTable, *bus)
	if err != nil {
		return err
	}
	defer done()
	return do(svc)
}

// service opens the named store and builds the admin service over it as the admin API has it
// (gateway.Deps.Attach): the same catalog decides which models and SMLTP policies exist (the
// demo models included when SECUREAI_DEMO is on, as the gateway it administers has them), and
// every change is an admin event — locally on the store's own event pipeline (its audit log and
// webhook deliveries, sent when the gateway next runs), in the cloud on the SECUREAI_EVENT_BUS bus
// when one is named. done hands the events over and closes the store.
func service(ctx context.Context, db, table, usersTable, bus string) (svc *keyadmin.Service, done func(), err error) {
	local := table == "" || db != ""
	env := envvar.New(os.Getenv)
	// The local gateway serves the demo models unless told not to; a function only when told to.
	withDemo := env.Bool("SECUREAI_DEMO", local)
	if err := env.Err(); err != nil {
		return nil, nil, err
	}
	cat, stopDemo, err := gateway.Catalog(os.Getenv("SECUREAI_CONFIG"), withDemo)
	if err != nil {
		return nil, nil, err
	}
	stopDemo() // only the catalog's names are needed, not the demo upstream
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var (
		stores gateway.Stores
		events interface{ Flush(context.Context) error }
		closer = func() {}
	)
	if local {
		if db == "" {
			db = cmp.Or(os.Getenv("SECUREAI_DATA_DIR"), ".secureai") + "/gateway.db"
		}
		s, err := boltstore.Open(db)
		if err != nil {
			return nil, nil, err
		}
		pipeline := localevents.New(s, webhook.ReachLoopback, log)
		stores = gateway.Stores{Keys: s, Users: s, Events: pipeline.Publisher}
		events, closer = pipeline.Publisher, func() { s.Close() }
	} else {
		if usersTable == "" {
			return nil, nil, errors.New("-users-table (or SECUREAI_TABLE_USERS) is required with -table: keys name the users they bill")
		}
		cfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, nil, err
		}
		awsclient.Guard(&cfg)
		s := dynamostore.New(dynamodb.NewFromConfig(cfg), dynamostore.Tables{APIKeys: table, Users: usersTable})
		stores = gateway.Stores{Keys: s, Users: s, Events: event.Discard{}}
		if bus != "" {
			async := event.NewAsync(eventbridge.New(awseventbridge.NewFromConfig(cfg), bus), log)
			stores.Events, events = async, async
		} else {
			fmt.Fprintln(os.Stderr, "admin: no -event-bus (SECUREAI_EVENT_BUS): changes are not audited")
		}
	}
	d := gateway.Deps{Catalog: cat, Log: log}
	if err := d.Attach(stores); err != nil {
		closer()
		return nil, nil, err
	}
	return d.KeyAdmin, func() {
		if events != nil {
			flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if err := events.Flush(flush); err != nil {
				fmt.Fprintln(os.Stderr, "admin: handing over the audit events:", err)
			}
		}
		closer()
	}, nil
}

func createKey(ctx context.Context, fs *flag.FlagSet, out io.Writer) func(*keyadmin.Service) error {
	name := fs.String("name", "", "a name to recognise the key by (required)")
	admin := fs.Bool("admin", false, "may call the admin routes")
	user := fs.String("user", "", "the user the key bills (created with the defaults if unknown)")
	mode := fs.String("billing-mode", "", "user-completions (default) or usage-by-model")
	perMinute := fs.Int("per-minute", 0, "requests per minute, ≤ 1000 (default 60)")
	perHour := fs.Int("per-hour", 0, "requests per hour, ≤ 10000 (default 1000)")
	daily := fs.Int("daily", 0, "requests per day (default 100)")
	monthly := fs.Int("monthly", 0, "requests per month (default 10000)")
	expires := fs.String("expires", "", "expiry: an RFC 3339 time or a duration from now such as 720h")
	models := fs.String("models", "", "comma-separated allowlist of models (empty: all)")
	policies := fs.String("policies", "", "comma-separated SMLTP policies the key may use (default public,internal)")
	defaults := fs.String("defaults", "", "comma-separated failoverDefaults chain (at most 3 models)")
	timeout := fs.Int("timeout-ms", 0, "failoverDefaults timeout_ms (clamped to 1000–300000)")
	firstToken := fs.Int("first-token-timeout-ms", 0, "failoverDefaults first_token_timeout_ms (clamped to 500–60000)")
	on := fs.String("on", "", "failoverDefaults triggers, comma-separated (default all four)")
	return func(s *keyadmin.Service) error {
		in := keyadmin.KeyInput{Name: keyadmin.Some(*name)}
		if *name == "" {
			in.Name = keyadmin.Opt[string]{}
		}
		if *admin {
			in.Admin = keyadmin.Some(true)
		}
		if *user != "" {
			in.UserID = keyadmin.Some(*user)
		}
		if *mode != "" {
			in.BillingMode = keyadmin.Some(apikey.BillingMode(*mode))
		}
		for _, c := range []struct {
			v   int
			dst *keyadmin.Opt[int]
		}{{*daily, &in.DailyLimit}, {*monthly, &in.MonthlyLimit}} {
			if c.v != 0 {
				*c.dst = keyadmin.Some(c.v)
			}
		}
		if *perMinute != 0 || *perHour != 0 {
			var rl keyadmin.RateLimitInput
			if *perMinute != 0 {
				rl.RequestsPerMinute = keyadmin.Some(*perMinute)
			}
			if *perHour != 0 {
				rl.RequestsPerHour = keyadmin.Some(*perHour)
			}
			in.RateLimit = keyadmin.Some(rl)
		}
		if *expires != "" {
			t, err := parseExpiry(*expires, time.Now())
			if err != nil {
				return err
			}
			in.ExpiresAt = keyadmin.Some(t)
		}
		if l := list(*models); l != nil {
			in.AllowedModels = keyadmin.Some(l)
		}
		if l := list(*policies); l != nil {
			in.AllowedSMLTPPolicies = keyadmin.Some(l)
		}
		if l := list(*defaults); l != nil {
			d := chain.Defaults{Models: l, TimeoutMS: *timeout, FirstTokenTimeoutMS: *firstToken}
			for _, r := range list(*on) {
				d.On = append(d.On, chain.Reason(r))
			}
			in.FailoverDefaults = keyadmin.Some(d)
		}
		c, err := s.Create(ctx, in)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "Created key %s (%s). Its secret, shown once:\n\n    %s\n\n", c.Key.ID, c.Key.Name, c.Secret)
		return printJSON(out, c.Key)
	}
}

func parseExpiry(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return time.Time{}, fmt.Errorf("-expires: want an RFC 3339 time or a positive duration such as 720h, got %q", s)
	}
	return now.Add(d), nil
}

func listKeys(ctx context.Context, out io.Writer) func(*keyadmin.Service) error {
	return func(s *keyadmin.Service) error {
		fmt.Fprintf(out, "%-21s %-12s %-6s %-16s %-24s %s\n", "ID", "PREFIX", "ADMIN", "USER", "STATUS", "NAME")
		for cursor := ""; ; {
			p, err := s.List(ctx, cursor, keyadmin.MaxPageSize, keyadmin.Filter{})
			if err != nil {
				return err
			}
			for _, k := range p.Keys {
				status := "active"
				switch {
				case k.RevokedAt != nil:
					status = "revoked " + k.RevokedAt.Format(time.DateOnly)
				case !k.Usable(time.Now()):
					status = "expired " + k.ExpiresAt.Format(time.DateOnly)
				}
				fmt.Fprintf(out, "%-21s %-12s %-6v %-16s %-24s %s\n", k.ID, k.Prefix, k.Admin, billing.UserID(k), status, k.Name)
			}
			if cursor = p.Next; cursor == "" {
				return nil
			}
		}
	}
}

func setUser(ctx context.Context, fs *flag.FlagSet, out io.Writer) func(*keyadmin.Service) error {
	id := fs.String("id", "", "the user's id (required)")
	points := fs.Int64("points", -1, "monthly points allowance")
	renewal := fs.Int("renewal-day", 0, "day of the month (1–28, UTC) the allowance renews")
	ubm := fs.String("usage-by-model", "", "enable usage-by-model billing: true or false")
	dollars := fs.Float64("dollar-limit", -1, "usage-by-model budget per period, in dollars")
	thresholds := fs.String("budget-thresholds", "", `percentages of the points allowance or dollar budget announced as billing:budget_threshold, comma-separated (e.g. 50,80,100); "none" for none`)
	return func(s *keyadmin.Service) error {
		var p billing.UserPatch
		if *thresholds != "" {
			th, err := parseThresholds(*thresholds)
			if err != nil {
				return err
			}
			p.BudgetThresholds = &th
		}
		if *points >= 0 {
			p.MonthlyPoints = billing.SomeInt64(*points)
		}
		if *renewal != 0 {
			p.RenewalDay = renewal
		}
		if *ubm != "" || *dollars >= 0 {
			p.UsageByModel = &billing.UsageByModelPatch{}
			if *ubm != "" {
				on, err := parseBool(*ubm)
				if err != nil {
					return err
				}
				p.UsageByModel.Enabled = &on
			}
			if *dollars >= 0 {
				p.UsageByModel.DollarLimit = dollars
			}
		}
		u, err := s.SetUser(ctx, *id, p)
		if err != nil {
			return err
		}
		return printJSON(out, u)
	}
}

// parseThresholds reads -budget-thresholds: comma-separated percentages, or "none" (the admin
// API validates them).
func parseThresholds(s string) ([]int, error) {
	th := []int{}
	if s == "none" {
		return th, nil
	}
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("-budget-thresholds: want comma-separated percentages or none, got %q", s)
		}
		th = append(th, n)
	}
	return th, nil
}

func parseBool(s string) (bool, error) {
	switch s {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("-usage-by-model: want true or false, got %q", s)
}

func printJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func list(csv string) []string {
	var out []string
	for _, m := range strings.Split(csv, ",") {
		if m = strings.TrimSpace(m); m != "" {
			out = append(out, m)
		}
	}
	return out
}

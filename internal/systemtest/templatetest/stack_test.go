package templatetest

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
)

// One stage: the routes exist only under the named stage, with its throttling and tracing. A
// Deployment with a StageName creates a stage of its own (SAM's "Stage" when an API has no
// OpenApiVersion), so none may carry one.
func TestOneStage(t *testing.T) {
	c := transformed(t, map[string]string{"Stage": "prod"})
	stages := c.ofType("AWS::ApiGateway::Stage")
	if len(stages) != 1 {
		t.Fatalf("the transformed template has stages %v, want exactly one", stages)
	}
	for _, id := range c.ofType("AWS::ApiGateway::Deployment") {
		if name := dig(c.props(t, id), "StageName"); name != nil {
			t.Errorf("deployment %s creates a stage %v besides %s", id, name, stages[0])
		}
	}
	stage := c.props(t, stages[0])
	if got := dig(stage, "StageName"); got != "prod" {
		t.Errorf("the stage is named %v, want the Stage parameter (prod)", got)
	}
	if dig(stage, "TracingEnabled") != true {
		t.Error("the stage does not trace (TracingEnabled)")
	}
	if dig(stage, "MethodSettings", "0", "ThrottlingRateLimit") == nil || dig(stage, "MethodSettings", "0", "ThrottlingBurstLimit") == nil {
		t.Errorf("the stage has no throttling: MethodSettings %v", dig(stage, "MethodSettings"))
	}
}

// pointInTimeRecovery are the tables whose loss loses money (keys, users' spend), evidence
// (receipts, the audit log) or configuration nobody has elsewhere (webhooks): restorable for 35
// days while the PointInTimeRecovery parameter is on. The others hold counters and records that
// expire within days and would be wrong to restore.
var pointInTimeRecovery = map[string]bool{
	"ApiKeysTable":  true,
	"UsersTable":    true,
	"ReceiptsTable": true,
	"AuditTable":    true,
	"WebhooksTable": true,
}

// Data survives: deleting the stack, or an update that replaces a table or secret, keeps it, and
// the tables that matter can be restored to any second of the last 35 days.
func TestDataSurvivesTheStack(t *testing.T) {
	for _, pitr := range []string{"true", "false"} {
		c := transformed(t, map[string]string{"PointInTimeRecovery": pitr})
		tables := c.ofType("AWS::DynamoDB::Table")
		if len(tables) == 0 {
			t.Fatal("the transformed template has no tables")
		}
		for _, id := range append(tables, c.ofType("AWS::SecretsManager::Secret")...) {
			r := c.Resources[id]
			if r.DeletionPolicy != "Retain" || r.UpdateReplacePolicy != "Retain" {
				t.Errorf("%s %s: DeletionPolicy %q, UpdateReplacePolicy %q; want both Retain", r.Type, id, r.DeletionPolicy, r.UpdateReplacePolicy)
			}
		}
		for _, id := range tables {
			got := dig(c.props(t, id), "PointInTimeRecoverySpecification", "PointInTimeRecoveryEnabled")
			want := pointInTimeRecovery[id] && pitr == "true"
			if got != want && !(got == nil && !want) {
				t.Errorf("PointInTimeRecovery=%s: %s has point-in-time recovery %v, want %v", pitr, id, got, want)
			}
		}
	}
	src := loadTemplate(t, testenv.RepoRoot(t))
	for id := range pointInTimeRecovery {
		if scalar(src.resource(id), "Type") != "AWS::DynamoDB::Table" {
			t.Errorf("pointInTimeRecovery names %s, which is no table of template.yaml", id)
		}
	}
}

// Alarms reach someone: with the default parameters (a topic of the stack's own), an e-mail, or
// an existing topic, every alarm notifies exactly the one topic, on alarm and on recovery; every
// function has an Errors and a Throttles alarm, every table one on its throttled reads and writes,
// the API one on its share of 5xx answers, and every dead-letter queue one on its depth.
func TestEveryAlarmNotifiesTheTopic(t *testing.T) {
	const existing = "arn:aws:sns:us-east-1:123456789012:pager"
	for _, tc := range []struct {
		name       string
		params     map[string]string
		topic      any // what AlarmActions must hold
		subscribed bool
	}{
		{"defaults", nil, map[string]any{"Ref": "AlarmTopic"}, false},
		{"AlarmEmail", map[string]string{"AlarmEmail": "ops@example.com"}, map[string]any{"Ref": "AlarmTopic"}, true},
		{"AlarmTopicArn", map[string]string{"AlarmTopicArn": existing, "AlarmEmail": "ops@example.com"}, existing, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := transformed(t, tc.params)
			if created := c.Resources["AlarmTopic"].Type == "AWS::SNS::Topic" && c.present(t, "AlarmTopic"); created != (tc.topic != existing) {
				t.Errorf("the stack creates its own AlarmTopic: %v; want %v", created, tc.topic != existing)
			}
			var subs []string
			for _, id := range c.ofType("AWS::SNS::Subscription") {
				if c.present(t, id) {
					subs = append(subs, id)
					p := c.props(t, id)
					if dig(p, "Endpoint") != tc.params["AlarmEmail"] || !reflect.DeepEqual(dig(p, "TopicArn"), tc.topic) {
						t.Errorf("subscription %s: %v to %v, want %s to %v", id, dig(p, "Endpoint"), dig(p, "TopicArn"), tc.params["AlarmEmail"], tc.topic)
					}
				}
			}
			if (len(subs) > 0) != tc.subscribed {
				t.Errorf("subscriptions %v, want one: %v", subs, tc.subscribed)
			}

			watched := map[string]bool{} // "<metric> <dimension value>"
			for _, id := range c.ofType("AWS::CloudWatch::Alarm") {
				p := c.props(t, id)
				for _, key := range []string{"AlarmActions", "OKActions"} {
					if acts, _ := dig(p, key).([]any); len(acts) != 1 || !reflect.DeepEqual(acts[0], tc.topic) {
						t.Errorf("alarm %s: %s %v, want [%v]", id, key, dig(p, key), tc.topic)
					}
				}
				// A plain alarm names its metric; a metric-math one lists its metrics under Metrics.
				metrics := []any{p}
				for _, m := range asList(dig(p, "Metrics")) {
					metrics = append(metrics, dig(m, "MetricStat", "Metric"))
				}
				for _, m := range metrics {
					for _, d := range asList(dig(m, "Dimensions")) {
						watched[fmt.Sprint(dig(m, "Namespace"), " ", dig(m, "MetricName"), " ", refOrAtt(dig(d, "Value")))] = true
					}
				}
			}
			for _, fn := range c.ofType("AWS::Lambda::Function") {
				for _, metric := range []string{"Errors", "Throttles"} {
					if !watched["AWS/Lambda "+metric+" "+fn] {
						t.Errorf("no alarm on %s's %s", fn, metric)
					}
				}
			}
			for _, table := range c.ofType("AWS::DynamoDB::Table") {
				for _, metric := range []string{"ReadThrottleEvents", "WriteThrottleEvents"} {
					if !watched["AWS/DynamoDB "+metric+" "+table] {
						t.Errorf("no alarm on %s's %s", table, metric)
					}
				}
			}
			// API Gateway names an API's metrics by its Name and stage.
			for _, api := range c.ofType("AWS::ApiGateway::RestApi") {
				name := refOrAtt(dig(c.props(t, api), "Name"))
				for _, metric := range []string{"5XXError", "Count"} {
					if name == "" || !watched["AWS/ApiGateway "+metric+" "+name] {
						t.Errorf("no alarm on %s's %s (ApiName %v)", api, metric, dig(c.props(t, api), "Name"))
					}
				}
			}
			for _, q := range c.ofType("AWS::SQS::Queue") {
				if dlq := refOrAtt(dig(c.props(t, q), "RedrivePolicy", "deadLetterTargetArn")); dlq != "" && !watched["AWS/SQS ApproximateNumberOfMessagesVisible "+dlq] {
					t.Errorf("no alarm on the depth of %s, %s's dead-letter queue", dlq, q)
				}
			}
		})
	}
}

func asList(v any) []any { l, _ := v.([]any); return l }

// refOrAtt returns X of {"Ref": X} or {"Fn::GetAtt": [X, …]}, "" otherwise.
func refOrAtt(v any) string {
	if r, ok := dig(v, "Ref").(string); ok {
		return r
	}
	if r, ok := dig(v, "Fn::GetAtt", "0").(string); ok {
		return r
	}
	return ""
}

// The alarm parameters admit what they say and nothing a deploy would fail on later.
func TestAlarmParametersAreConstrained(t *testing.T) {
	params := get(loadTemplate(t, testenv.RepoRoot(t)).root, "Parameters")
	for name, samples := range map[string]struct{ valid, invalid []string }{
		"AlarmEmail": {valid: []string{"", "ops@example.com", "a.b+alarms@sub.example.co.uk"},
			invalid: []string{"ops", "ops@example", "ops @example.com", "a@b.com,c@d.com"}},
		"AlarmTopicArn": {valid: []string{"", "arn:aws:sns:us-east-1:123456789012:pager", "arn:aws-us-gov:sns:us-gov-west-1:123456789012:ops.fifo"},
			invalid: []string{"pager", "arn:aws:sqs:us-east-1:123456789012:pager", "arn:aws:sns:us-east-1:1234:pager"}},
	} {
		admits := constraint(t, get(params, name))
		for _, v := range samples.valid {
			if !admits(v) {
				t.Errorf("%s refuses %q", name, v)
			}
		}
		for _, v := range samples.invalid {
			if admits(v) {
				t.Errorf("%s admits %q", name, v)
			}
		}
	}
}

package templatetest

import (
	"testing"

	"github.com/secureai-gateway/gateway/internal/testenv"
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

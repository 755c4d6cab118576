package templatetest

import (
	"testing"
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

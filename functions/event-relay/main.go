// Command event-relay is the Lambda on the event outbox queue: it puts on the bus the events a
// gateway function could not hand over to EventBridge before its invocation had to end.
package main

import (
	"log"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/secureai-gateway/gateway/internal/aws/cloud"
	"github.com/secureai-gateway/gateway/internal/aws/sqsqueue"
)

func main() {
	c := cloud.MustLoad("event-relay")
	if c.Bus == nil {
		log.Fatal("event-relay: SECUREAI_EVENT_BUS is not set: the relay has no bus to put events on")
	}
	lambda.Start(sqsqueue.Relay(c.Bus, c.Log))
}

// Command refund-sweep is the Lambda a schedule runs every five minutes: it refunds the
// reservations whose requests never settled by their deadline (their function died mid-request),
// each exactly once.
package main

import (
	"log"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/secureai-gateway/gateway/internal/aws/cloud"
)

func main() {
	c := cloud.MustLoad("refund-sweep")
	if c.Config.Tables.Users == "" {
		log.Fatal("refund-sweep: SECUREAI_TABLE_USERS is not set: there are no reservations to sweep")
	}
	lambda.Start(c.RefundSweep)
}

// Package dynamostore is the DynamoDB store the gateway's Lambdas use in the cloud. It implements
// the same interfaces as the embedded store (internal/store/boltstore), and the same contract suites in
// internal/testkit/storetest run against both, the DynamoDB side on moto.
//
// The table schemas live in one place, schema.go; the SAM template declares the same tables.
// Callers build the *dynamodb.Client once (at Lambda init) and pass it to New; nothing here creates
// clients per request.
package dynamostore

package dynamostore

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// Store is the DynamoDB store. It is safe for concurrent use, like the client it wraps.
type Store struct {
	db     *dynamodb.Client
	tables Tables
}

// New returns a store over client, which the caller builds once (at Lambda init) so every
// request reuses its connections. Call tables.Validate first to fail a misconfigured cold start
// with a clear message rather than each request with DynamoDB's validation error.
func New(client *dynamodb.Client, tables Tables) *Store {
	return &Store{db: client, tables: tables}
}

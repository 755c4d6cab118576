// Package functest runs each built function binary (functions/*) under the Lambda Runtime
// Interface Emulator with every sample event in events/, against DynamoDB and Secrets Manager on
// a moto server, and checks each response. It holds tests only; `make test` runs them and installs
// the emulator and moto first.
package functest

// Package templatetest checks template.yaml without an AWS account: cfn-lint and
// `sam validate --lint` must find nothing, and the template must agree with the code it deploys —
// the DynamoDB schema in internal/store/dynamostore, the functions under functions/, the Makefile's build
// targets. It holds tests only; `make test` installs the tools first.
package templatetest

package testenv

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// Region is the one region of every test's AWS calls and resources.
const Region = "us-east-1"

// AWSConfig returns an SDK config pointed at endpoint (from Moto) with dummy
// static credentials in Region. It is built by hand rather than with
// config.LoadDefaultConfig so nothing from the developer's environment or
// ~/.aws can point a test at a real account.
func AWSConfig(t testing.TB, endpoint string) aws.Config {
	t.Helper()
	return aws.Config{
		Region:       Region,
		Credentials:  credentials.NewStaticCredentialsProvider("testing", "testing", ""),
		BaseEndpoint: aws.String(endpoint),
	}
}

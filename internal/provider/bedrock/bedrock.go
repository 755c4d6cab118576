// Package bedrock adapts Amazon Bedrock's Converse and ConverseStream APIs to the gateway's
// OpenAI-shaped provider interface, through aws-sdk-go-v2's bedrockruntime client: SigV4 signing
// and the binary event-stream framing are the SDK's job, translation and classification ours.
package bedrock

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/secureai-gateway/gateway/internal/aws/awsclient"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"

	"github.com/secureai-gateway/gateway/internal/provider"
)

type adapter struct {
	name    string
	aws     aws.Config
	http    *http.Client // the gateway's shared pool; nil keeps the SDK's own
	region  string
	baseURL string

	mu      sync.Mutex
	clients map[string]*bedrockruntime.Client // by region, created on first use
}

// New loads the AWS configuration once (IAM credentials from the default chain, resolved lazily
// at the first call, so nothing goes over the network here).
func New(cfg provider.Config) (provider.Provider, error) {
	awsCfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		return nil, fmt.Errorf("bedrock: load AWS configuration: %w", err)
	}
	// Failover is the chain's job: an SDK retry would hide a throttle behind seconds of backoff.
	awsCfg.Retryer = func() aws.Retryer { return aws.NopRetryer{} }
	return &adapter{name: cfg.NameOr("bedrock"), aws: awsCfg, region: cfg.Region, baseURL: cfg.BaseURL, http: cfg.Client, clients: map[string]*bedrockruntime.Client{}}, nil
}

// client returns the region's client; the model's region comes first, then the provider's, then
// the AWS configuration's.
func (a *adapter) client(region string) (*bedrockruntime.Client, error) {
	for _, r := range []string{a.region, a.aws.Region} {
		if region == "" {
			region = r
		}
	}
	if region == "" {
		return nil, provider.NotConfigured(a.name, "has no region configured", nil)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.clients[region]
	if c == nil {
		c = bedrockruntime.NewFromConfig(a.aws, func(o *bedrockruntime.Options) {
			o.Region = region
			if a.baseURL != "" {
				o.BaseEndpoint = aws.String(a.baseURL)
			}
			if a.http != nil {
				o.HTTPClient = a.http
			}
			o.HTTPClient = awsclient.GuardBody(o.HTTPClient) // see docs/decisions.md
		})
		a.clients[region] = c
	}
	return c, nil
}

func (a *adapter) Complete(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	c, in, err := a.prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	if native(req) {
		return a.invoke(ctx, c, req)
	}
	out, err := c.Converse(ctx, &bedrockruntime.ConverseInput{
		ModelId: aws.String(req.Model), Messages: in.messages, System: in.system,
		InferenceConfig: in.inference, ToolConfig: in.tools, OutputConfig: in.output,
	}, withSendHook(req.OnSend)...)
	if err != nil {
		return nil, a.classify(err, req.Model)
	}
	return translateResponse(out, req.Model, time.Now().Unix())
}

func (a *adapter) Stream(ctx context.Context, req *provider.Request) (provider.Stream, error) {
	c, in, err := a.prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	if native(req) {
		return a.invokeStream(ctx, c, req)
	}
	out, err := c.ConverseStream(ctx, &bedrockruntime.ConverseStreamInput{
		ModelId: aws.String(req.Model), Messages: in.messages, System: in.system,
		InferenceConfig: in.inference, ToolConfig: in.tools, OutputConfig: in.output,
	}, withSendHook(req.OnSend)...)
	if err != nil {
		return nil, a.classify(err, req.Model)
	}
	return a.newStream(ctx, out.GetStream(), req.Model, time.Now().Unix()), nil
}

func (a *adapter) prepare(ctx context.Context, req *provider.Request) (*bedrockruntime.Client, *converse, error) {
	// Asked of the credential cache first (free once cached), so a machine without AWS
	// credentials gets a clear, final "not configured" instead of an opaque SDK failure that
	// would read as a provider fault and fail over.
	if a.aws.Credentials == nil {
		return nil, nil, provider.NotConfigured(a.name, "has no AWS credentials", nil)
	}
	if _, err := a.aws.Credentials.Retrieve(ctx); err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, provider.NotConfigured(a.name, "has no usable AWS credentials (the AWS default credential chain found none)", err)
	}
	c, err := a.client(req.Region)
	if err != nil || native(req) {
		return c, nil, err // a passed-through request needs no Converse translation
	}
	in, err := toConverse(req.Body)
	return c, in, err
}

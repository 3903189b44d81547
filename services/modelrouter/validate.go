package modelrouter

import (
	"errors"
	"fmt"
	"net/url"
)

// Validate checks the router's numbers, durations and URLs, naming the
// setting that is off.
func (c *Config) Validate() error {
	var errs []error
	if c.MaxRetries < 0 || c.MaxRetries > 20 {
		errs = append(errs, fmt.Errorf("NEXUS_MODEL_MAX_RETRIES=%d: want 0 to 20", c.MaxRetries))
	}
	if c.RetryBaseDelay < 0 {
		errs = append(errs, fmt.Errorf("NEXUS_MODEL_RETRY_BASE_DELAY=%s: must not be negative", c.RetryBaseDelay))
	}
	if c.RetryMaxDelay < c.RetryBaseDelay {
		errs = append(errs, fmt.Errorf("NEXUS_MODEL_RETRY_MAX_DELAY=%s: must be at least NEXUS_MODEL_RETRY_BASE_DELAY (%s)", c.RetryMaxDelay, c.RetryBaseDelay))
	}
	if c.StreamIdleTimeout <= 0 {
		errs = append(errs, fmt.Errorf("NEXUS_MODEL_STREAM_IDLE_TIMEOUT=%s: must be positive", c.StreamIdleTimeout))
	}
	for _, u := range []struct{ name, v string }{
		{"ANTHROPIC_BASE_URL", c.AnthropicBaseURL}, {"OPENAI_BASE_URL", c.OpenAIBaseURL},
		{"GOOGLE_GEMINI_BASE_URL", c.GeminiBaseURL}, {"NEXUS_OPENAI_COMPAT_BASE_URL", c.CompatBaseURL},
		{"NEXUS_REPLAY_BASE_URL", c.ReplayBaseURL},
	} {
		if u.v == "" {
			continue
		}
		if p, err := url.Parse(u.v); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			errs = append(errs, fmt.Errorf("%s=%q: want an http(s) URL", u.name, u.v))
		}
	}
	return errors.Join(errs...)
}

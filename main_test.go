package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/client-go/rest"
)

func TestSetRateLimit(t *testing.T) {
	tests := []struct {
		name       string
		qps        float64
		burst      int
		wantBucket bool
		// immediate is how many requests go at once (the burst).
		immediate int
	}{
		{"negative: no client-side limit", -1, 0, false, 0},
		{"a rate without a burst takes client-go's burst", 50, 0, true, rest.DefaultBurst},
		{"zero takes client-go's rate and burst", 0, 0, true, rest.DefaultBurst},
		{"both set", 50, 25, true, 25},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &rest.Config{}
			setRateLimit(cfg, tt.qps, tt.burst)
			if !tt.wantBucket {
				assert.Nil(t, cfg.RateLimiter)
				assert.Negative(t, cfg.QPS, "client-go reads a negative QPS as no limit")
				return
			}
			if assert.NotNil(t, cfg.RateLimiter) {
				for i := range tt.immediate {
					assert.True(t, cfg.RateLimiter.TryAccept(), "request %d of the burst", i+1)
				}
				assert.False(t, cfg.RateLimiter.TryAccept(), "the request after the burst waits")
			}
		})
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const factory = `package factory

import (
	"context"

	"sigs.k8s.io/external-dns/provider"
	"sigs.k8s.io/external-dns/provider/aws"
	"sigs.k8s.io/external-dns/provider/azure"
	"sigs.k8s.io/external-dns/provider/rfc2136"
	"sigs.k8s.io/external-dns/provider/webhook"
)

func providers(selector string) (ProviderConstructor, bool) {
	m := map[string]ProviderConstructor{
		externaldns.ProviderAWS:          aws.New,
		externaldns.ProviderAzure:        azure.New,
		externaldns.ProviderAzurePrivate: azure.NewPrivate,
		externaldns.ProviderRFC2136:      rfc2136.New,
		externaldns.ProviderWebhook:      webhook.New,
	}
	c, ok := m[selector]
	return c, ok
}
`

func TestKeepProviders(t *testing.T) {
	for _, tt := range []struct {
		name, file string
		keep       []string
		want       []string // lines the result has
		wantGone   []string // lines it no longer has
		wantErr    string
	}{
		{name: "the others' imports and entries go", file: factory, keep: []string{"rfc2136", "azure"},
			want: []string{`"sigs.k8s.io/external-dns/provider"`, `"sigs.k8s.io/external-dns/provider/azure"`, `"sigs.k8s.io/external-dns/provider/rfc2136"`,
				"externaldns.ProviderAzure:        azure.New,", "externaldns.ProviderAzurePrivate: azure.NewPrivate,", "externaldns.ProviderRFC2136:      rfc2136.New,",
				"c, ok := m[selector]"},
			wantGone: []string{"provider/aws", "provider/webhook", "aws.New", "webhook.New"}},
		{name: "a kept provider missing from the table", file: factory, keep: []string{"rfc2136", "pdns"}, wantErr: `provider "pdns": no entry`},
		{name: "a dropped provider used elsewhere", file: strings.Replace(factory, "c, ok := m[selector]", "aws.Init()\n\tc, ok := m[selector]", 1),
			keep: []string{"rfc2136"}, wantErr: `provider "aws" is used outside`},
		{name: "a file of another shape", file: "package factory\n", keep: []string{"rfc2136"}, wantErr: "not shaped"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := keepProviders(tt.file, tt.keep)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			for _, line := range tt.want {
				assert.Contains(t, got, line)
			}
			for _, gone := range tt.wantGone {
				assert.NotContains(t, got, gone)
			}
		})
	}
}

// The ExternalDNS version the tools module requires has the factory this command expects: the
// providers the project runs are kept and every other one goes.
func TestKeepProviders_TheRequiredExternalDNS(t *testing.T) {
	dir, err := downloadedModule(filepath.Join("..", "tools", "external-dns"))
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(dir, factoryFile))
	require.NoError(t, err)
	got, err := keepProviders(string(data), []string{"rfc2136", "azure"})
	require.NoError(t, err)
	assert.Contains(t, got, "rfc2136.New,")
	assert.Contains(t, got, "azure.NewPrivate,")
	for _, gone := range []string{"aws.New", "google.New", "cloudflare.New", "webhook.New"} {
		assert.NotContains(t, got, gone)
	}
}

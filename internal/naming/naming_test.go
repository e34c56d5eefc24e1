package naming

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSourceHostname(t *testing.T) {
	tests := []struct {
		service, letter, env, app, domain, want string
	}{
		{"api", "p", "prod", "myapp", "example.com", "api-ns-p-prod-myapp.example.com"},
		{"admin", "p", "prod", "myapp", "aks.vecp.vczc.nl", "admin-ns-p-prod-myapp.aks.vecp.vczc.nl"},
		{"auth", "d", "dev", "identity", "aks.vecd.vczc.nl", "auth-ns-d-dev-identity.aks.vecd.vczc.nl"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, SourceHostname(tt.service, tt.letter, tt.env, tt.app, tt.domain))
	}
}

func TestTargetHostname(t *testing.T) {
	assert.Equal(t, "aks01-weu-internal.example.com", TargetHostname("aks01", "weu", "internal", "example.com"))
	assert.Equal(t, "vec-weu-p-aks01-weu-external.aks.vecp.vczc.nl", TargetHostname("vec-weu-p-aks01", "weu", "external", "aks.vecp.vczc.nl"))
}

func TestEndpointNames(t *testing.T) {
	assert.Equal(t, "api-route-external-dns-weu", RouteEndpointName("api-route", "external-dns-weu"))
	assert.Equal(t, "gateway-controller-aks-istio-ingressgateway-internal-internal-external-dns-weu",
		GatewayEndpointName("aks-istio-ingressgateway-internal", "internal", "external-dns-weu"))
}

func TestValidateHostname(t *testing.T) {
	label63 := strings.Repeat("a", 63)
	tests := []struct {
		name    string
		host    string
		wantErr string
	}{
		{"ordinary", "api-ns-p-prod-myapp.example.com", ""},
		{"63-character label", label63 + ".example.com", ""},
		{"64-character label", label63 + "a.example.com", "more than the 63 a DNS label may have"},
		{"253 characters", strings.Repeat(label63+".", 3) + strings.Repeat("b", 61), ""},
		{"254 characters", strings.Repeat(label63+".", 3) + strings.Repeat("b", 62), "more than the 253 a DNS name may have"},
		{"empty label", "api..example.com", "empty label"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateHostname(tt.host)
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

// TestClaimKeys_FindEveryRouteWithTheSameLabel checks the property the hostname-conflict lookup
// relies on: two field combinations produce the same label with a letter exactly when the key of
// one is among the ClaimKeys of the other's label.
func TestClaimKeys_FindEveryRouteWithTheSameLabel(t *testing.T) {
	type fields struct{ service, env, app string }
	tests := []struct {
		name   string
		letter string
		a, b   fields
		same   bool
	}{
		{"identical", "d", fields{"api", "dev", "myapp"}, fields{"api", "dev", "myapp"}, true},
		{"different service", "d", fields{"api", "dev", "myapp"}, fields{"web", "dev", "myapp"}, false},
		{"dash moves between environment and application", "d", fields{"api", "dev-eu", "myapp"}, fields{"api", "dev", "eu-myapp"}, true},
		{"service contains the infix", "d", fields{"a-ns-d-b", "c", "d"}, fields{"a", "b-ns-d-c", "d"}, true},
		{"infix with another letter", "p", fields{"a-ns-d-b", "c", "d"}, fields{"a", "b-ns-d-c", "d"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			labelA := SourceLabel(tt.a.service, tt.letter, tt.a.env, tt.a.app)
			labelB := SourceLabel(tt.b.service, tt.letter, tt.b.env, tt.b.app)
			require.Equal(t, tt.same, labelA == labelB, "test case premise")
			keyB := HostnameKey(tt.b.service, tt.b.env, tt.b.app)
			assert.Equal(t, tt.same, slices.Contains(ClaimKeys(labelA, tt.letter), keyB))
			keyA := HostnameKey(tt.a.service, tt.a.env, tt.a.app)
			assert.Contains(t, ClaimKeys(labelA, tt.letter), keyA, "a label's own key is always among its claim keys")
			assert.True(t, IsHostnameKey(keyA, tt.a.service, tt.a.env, tt.a.app))
			assert.Equal(t, keyB == keyA, IsHostnameKey(keyB, tt.a.service, tt.a.env, tt.a.app), "IsHostnameKey is equality with HostnameKey")
		})
	}
}

func TestIsHostnameKey_IsEqualityWithTheBuiltKey(t *testing.T) {
	key := HostnameKey("api", "dev", "myapp")
	for _, f := range [][3]string{
		{"api", "dev", "myapp"}, {"api", "dev", "myap"}, {"api", "dev", "myappx"}, {"ap", "dev", "myapp"},
		{"api-ns-*", "dev", "myapp"}, {"api", "de", "v-myapp"}, {"api", "", "dev-myapp"}, {"", "", ""},
	} {
		assert.Equal(t, key == HostnameKey(f[0], f[1], f[2]), IsHostnameKey(key, f[0], f[1], f[2]), "%q", f)
	}
}

func TestApplications(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		want        []string
		wantListed  bool
	}{
		{"no annotations", nil, nil, false},
		{"other annotations", map[string]string{"team": "a"}, nil, false},
		{"one", map[string]string{AnnotationApplications: "app1"}, []string{"app1"}, true},
		{"several with spaces and empty entries", map[string]string{AnnotationApplications: " app1, ,app2 ,"}, []string{"app1", "app2"}, true},
		{"set but empty: a list of nothing", map[string]string{AnnotationApplications: ""}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, listed := Applications(tt.annotations)
			if !slices.Equal(got, tt.want) || listed != tt.wantListed {
				t.Errorf("Applications(%v) = %v, %v; want %v, %v", tt.annotations, got, listed, tt.want, tt.wantListed)
			}
		})
	}
}

func TestIntermediateName_IsNoRouteHostnameAndSaysWhatItStandsFor(t *testing.T) {
	name := IntermediateName("internal", "myapp", "weu", "example.com")
	assert.Equal(t, "internal.myapp.weu._router-failover.example.com", name)
	assert.NoError(t, ValidateHostname(name))
	tests := []struct {
		name string
		want bool
	}{
		{name, true},
		{strings.ToUpper(name) + ".", true},
		{"_router-failover.example.com", true},
		{"api-ns-p-prod-myapp.example.com", false},
		{"aks01-weu-internal.example.com", false},
		{"x._router-failover-not.example.com", false},
		{"aks01.weu._router-heartbeat.example.com", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, IsIntermediate(tt.name), tt.name)
	}
}

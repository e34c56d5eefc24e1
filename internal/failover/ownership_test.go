package failover

import (
	"strings"
	"testing"
)

func TestPassOwnership(t *testing.T) {
	const (
		aks01 = "external-dns-weu-aks01"
		aks02 = "external-dns-weu-aks02"
	)
	tests := []struct {
		name, value, want string
		ok                bool
	}{
		{"the owner passes, every other label kept",
			"heritage=external-dns,external-dns/owner=" + aks01 + ",external-dns/resource=crd/myapp/api",
			"heritage=external-dns,external-dns/owner=" + aks02 + ",external-dns/resource=crd/myapp/api", true},
		{"as dig prints it, quoted",
			`"heritage=external-dns,external-dns/owner=` + aks01 + `,external-dns/resource=crd/myapp/api"`,
			`"heritage=external-dns,external-dns/owner=` + aks02 + `,external-dns/resource=crd/myapp/api"`, true},
		{"owned by somebody else: not ours to pass", "heritage=external-dns,external-dns/owner=external-dns-weu-aks03,external-dns/resource=crd/myapp/api", "", false},
		{"an owner ID that only starts with from is another owner", "heritage=external-dns,external-dns/owner=" + aks01 + "-old", "", false},
		{"no owner label", "heritage=external-dns,external-dns/resource=crd/myapp/api", "", false},
		{"not an ownership value", "v=spf1 -all", "", false},
		{"an encrypted value is not recognised", "mh4bV3p2ZmFrZQ==", "", false},
	}
	for _, tt := range tests {
		got, ok := PassOwnership(tt.value, aks01, aks02)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: PassOwnership = %q, %v; want %q, %v", tt.name, got, ok, tt.want, tt.ok)
		}
		if ok && strings.Count(got, "external-dns/owner=") != 1 {
			t.Errorf("%s: %q names more than one owner", tt.name, got)
		}
	}
}

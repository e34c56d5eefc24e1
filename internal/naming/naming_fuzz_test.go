package naming

import (
	"regexp"
	"slices"
	"testing"
)

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// FuzzClaimKeys checks the property hostname-conflict detection relies on, for any two routes:
// their labels are equal exactly when one's key is among the other label's claim keys. Run
// `go test ./internal/naming -fuzz FuzzClaimKeys` to explore beyond the seeds.
func FuzzClaimKeys(f *testing.F) {
	f.Add("api", "dev", "myapp", "api", "dev", "myapp", "d")
	f.Add("a-ns-d-b", "c", "d", "a", "b-ns-d-c", "d", "d")
	f.Add("a-ns-d-b", "c", "d", "a", "b-ns-d-c", "d", "p")
	f.Add("api", "dev-eu", "x", "api", "dev", "eu-x", "d")
	f.Add("x-ns-1-y-ns-1-z", "e", "a", "x", "y-ns-1-z-e", "a", "1")
	f.Fuzz(func(t *testing.T, s1, e1, a1, s2, e2, a2, letter string) {
		for _, v := range []string{s1, e1, a1, s2, e2, a2} {
			if len(v) > 20 || !dnsLabel.MatchString(v) {
				t.Skip("admission accepts only DNS labels")
			}
		}
		if len(letter) != 1 || !dnsLabel.MatchString(letter) {
			t.Skip("the environment letter is one lowercase letter or digit")
		}
		label1 := SourceLabel(s1, letter, e1, a1)
		label2 := SourceLabel(s2, letter, e2, a2)
		found := slices.Contains(ClaimKeys(label1, letter), HostnameKey(s2, e2, a2))
		if found != (label1 == label2) {
			t.Fatalf("labels %q and %q: equal=%v, but key of the second among claim keys of the first=%v", label1, label2, label1 == label2, found)
		}
	})
}

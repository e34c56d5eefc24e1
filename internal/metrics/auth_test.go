package metrics

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func TestBearerToken(t *testing.T) {
	for header, want := range map[string]string{
		"":                 "",
		"Bearer abc":       "abc",
		"bearer  abc ":     "abc",
		"Basic dXNlcjpwdw": "",
		"Bearer":           "",
		"Bearerabc":        "",
	} {
		r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if header != "" {
			r.Header.Set("Authorization", header)
		}
		if got := bearerToken(r); got != want {
			t.Errorf("Authorization %q: got token %q, want %q", header, got, want)
		}
	}
}

// reviewingAPIServer answers TokenReviews (tokens "reader" and "stranger" are valid) and
// SubjectAccessReviews (only "reader" may GET /metrics), and counts the reviews it was sent.
func reviewingAPIServer(reviews *int, failing *bool) client.Client {
	scheme := runtime.NewScheme()
	_ = authenticationv1.AddToScheme(scheme)
	_ = authorizationv1.AddToScheme(scheme)
	return fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
			*reviews++
			if *failing {
				return context.DeadlineExceeded
			}
			switch o := obj.(type) {
			case *authenticationv1.TokenReview:
				if o.Spec.Token == "reader" || o.Spec.Token == "stranger" {
					o.Status = authenticationv1.TokenReviewStatus{Authenticated: true,
						User: authenticationv1.UserInfo{Username: "system:serviceaccount:monitoring:" + o.Spec.Token}}
				}
			case *authorizationv1.SubjectAccessReview:
				a := o.Spec.NonResourceAttributes
				o.Status.Allowed = o.Spec.User == "system:serviceaccount:monitoring:reader" && a.Verb == "get" && a.Path == "/metrics"
			}
			return nil
		},
	}).Build()
}

// testReviews returns reviews against reviewingAPIServer at a clock the test sets.
func testReviews(reviews *int, failing *bool, now *time.Time) *scrapeReviews {
	return &scrapeReviews{client: reviewingAPIServer(reviews, failing), now: func() time.Time { return *now },
		answers: map[scrapeKey]scrapeAnswer{}}
}

func TestScrapeReviews_AnswersAndCaches(t *testing.T) {
	var reviews int
	var failing bool
	now := time.Unix(1_000_000, 0)
	s := testReviews(&reviews, &failing, &now)
	ctx, log := context.Background(), logr.Discard()

	steps := []struct {
		what        string
		token, verb string
		advance     time.Duration
		failing     bool
		wantCode    int
		wantReviews int // reviews sent for this step
	}{
		{"no token", "", "get", 0, false, http.StatusUnauthorized, 0},
		{"a token the API server rejects", "forged", "get", 0, false, http.StatusUnauthorized, 1},
		{"the same rejected token, cached", "forged", "get", 0, false, http.StatusUnauthorized, 0},
		{"a valid token without the role", "stranger", "get", 0, false, http.StatusForbidden, 2},
		{"the reader", "reader", "get", 0, false, http.StatusOK, 2},
		{"the reader again, cached", "reader", "get", 30 * time.Second, false, http.StatusOK, 0},
		{"the reader with another verb is reviewed apart", "reader", "post", 0, false, http.StatusForbidden, 2},
		{"the reader after the cache expired, API server failing", "reader", "get", time.Minute, true, http.StatusInternalServerError, 1},
		{"a failure is not cached", "reader", "get", 0, false, http.StatusOK, 2},
	}
	for _, st := range steps {
		now = now.Add(st.advance)
		failing = st.failing
		before := reviews
		code, message := s.decide(ctx, log, st.token, st.verb, "/metrics")
		if code != st.wantCode || reviews-before != st.wantReviews {
			t.Errorf("%s: got %d (%s) after %d reviews, want %d after %d", st.what, code, message, reviews-before, st.wantCode, st.wantReviews)
		}
	}
}

func TestScrapeReviews_CacheIsBounded(t *testing.T) {
	var reviews int
	var failing bool
	now := time.Unix(1_000_000, 0)
	s := testReviews(&reviews, &failing, &now)
	for i := range 3 * maxCachedAnswers {
		s.decide(context.Background(), logr.Discard(), fmt.Sprintf("forged-%d", i), "get", "/metrics")
	}
	if len(s.answers) > maxCachedAnswers {
		t.Errorf("%d answers cached, want at most %d", len(s.answers), maxCachedAnswers)
	}
}

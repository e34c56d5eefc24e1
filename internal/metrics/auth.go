package metrics

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// The /metrics endpoint lets a scrape through when the API server says its bearer token is valid
// (TokenReview) and its user may GET the path (SubjectAccessReview on a non-resource URL), what
// the metrics-reader ClusterRole grants. controller-runtime's filters.WithAuthenticationAndAuthorization
// does the same through k8s.io/apiserver's delegating authenticator and authorizer; linking that
// package tree (with CEL, OpenTelemetry, gRPC) made the binary 20 MB larger and every replica
// 14 MiB larger in memory before it read a single object (docs/DEVELOPMENT.md#where-the-memory-goes).
// The two reviews are two API calls; the answers are cached as the delegating filter caches them.

// Answers are cached because a scraper sends the same token every 15–60 s. An allowed scrape is
// cached as long as the delegating authenticator caches a token (a revoked token stops working
// within a minute); a refusal as long as the delegating authorizer caches a denial (a new
// binding takes effect within 30 s).
const (
	allowCacheTTL    = time.Minute
	denyCacheTTL     = 30 * time.Second
	reviewTimeout    = 10 * time.Second
	maxCachedAnswers = 1024 // a full cache forgets the expired answers, then all of them
)

// AuthorizedScrapes is the FilterProvider of secure serving.
func AuthorizedScrapes(cfg *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	scheme := runtime.NewScheme()
	if err := authenticationv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := authorizationv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{HTTPClient: httpClient, Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("a client for token and access reviews: %w", err)
	}
	reviews := &scrapeReviews{client: c, now: time.Now, answers: map[scrapeKey]scrapeAnswer{}}
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			code, message := reviews.decide(r.Context(), log, bearerToken(r), strings.ToLower(r.Method), r.URL.Path)
			if code != http.StatusOK {
				http.Error(w, message, code)
				return
			}
			next.ServeHTTP(w, r)
		}), nil
	}, nil
}

// bearerToken returns the token of an "Authorization: Bearer" header, "" without one.
func bearerToken(r *http.Request) string {
	scheme, token, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

type scrapeKey struct {
	token      [sha256.Size]byte // never the token itself
	verb, path string
}

type scrapeAnswer struct {
	code    int
	message string
	expires time.Time
}

type scrapeReviews struct {
	client client.Client
	now    func() time.Time

	mu      sync.Mutex
	answers map[scrapeKey]scrapeAnswer
}

// decide answers a scrape with 200, 401 (no token, or one the API server rejects), 403 (a user
// who may not GET the path) or 500 (a review that failed: not cached, the next scrape asks again).
func (s *scrapeReviews) decide(ctx context.Context, log logr.Logger, token, verb, path string) (int, string) {
	if token == "" {
		return http.StatusUnauthorized, "Unauthorized: a bearer token is required"
	}
	key := scrapeKey{token: sha256.Sum256([]byte(token)), verb: verb, path: path}
	if a, ok := s.cached(key); ok {
		return a.code, a.message
	}
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	a, err := s.review(ctx, token, verb, path)
	if err != nil {
		log.Error(err, "reviewing a scrape of the metrics endpoint")
		return http.StatusInternalServerError, "Authentication or authorization failed: the API server could not review the request"
	}
	s.remember(key, a)
	return a.code, a.message
}

func (s *scrapeReviews) review(ctx context.Context, token, verb, path string) (scrapeAnswer, error) {
	now := s.now()
	tr := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}
	if err := s.client.Create(ctx, tr); err != nil {
		return scrapeAnswer{}, fmt.Errorf("TokenReview: %w", err)
	}
	if !tr.Status.Authenticated {
		return scrapeAnswer{code: http.StatusUnauthorized, message: "Unauthorized: the API server does not accept this token",
			expires: now.Add(denyCacheTTL)}, nil
	}
	user := tr.Status.User
	extra := make(map[string]authorizationv1.ExtraValue, len(user.Extra))
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
	}}
	if err := s.client.Create(ctx, sar); err != nil {
		return scrapeAnswer{}, fmt.Errorf("SubjectAccessReview: %w", err)
	}
	if !sar.Status.Allowed || sar.Status.Denied {
		return scrapeAnswer{code: http.StatusForbidden, message: fmt.Sprintf("Forbidden: user %q may not %s %s", user.Username, verb, path),
			expires: now.Add(denyCacheTTL)}, nil
	}
	return scrapeAnswer{code: http.StatusOK, expires: now.Add(allowCacheTTL)}, nil
}

func (s *scrapeReviews) cached(key scrapeKey) (scrapeAnswer, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.answers[key]
	if !ok || !s.now().Before(a.expires) {
		return scrapeAnswer{}, false
	}
	return a, true
}

func (s *scrapeReviews) remember(key scrapeKey, a scrapeAnswer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.answers) >= maxCachedAnswers {
		now := s.now()
		for k, old := range s.answers {
			if !now.Before(old.expires) {
				delete(s.answers, k)
			}
		}
		if len(s.answers) >= maxCachedAnswers {
			clear(s.answers)
		}
	}
	s.answers[key] = a
}

package app

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/service-router/service-router-operator/internal/manifestcheck"
)

// A GitOps gate tells a change that deletes too much (2) and one the API server would refuse (3)
// from a broken pipeline (1).
func TestExitCode_TellsTheGatesVerdictsFromAFailure(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("listing ServiceRoutes in every namespace: forbidden"), 1},
		{&TooManyDeletionsError{Removed: 2, Max: 0}, ExitTooManyDeletions},
		{fmt.Errorf("plan: %w", &manifestcheck.RefusedError{Errors: []error{errors.New("invalid")}}), ExitRefused},
	} {
		assert.Equal(t, tt.want, ExitCode(tt.err), "%v", tt.err)
	}
}

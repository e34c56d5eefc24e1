package main

import (
	"reflect"
	"testing"
)

func TestSpread(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tests []string
		n     int
		want  [][]string
	}{
		{"one shard keeps every test, longest first", []string{"TestHomelab_WalkthroughResolves", "TestOLM_SubscriberJourney"}, 1,
			[][]string{{"TestOLM_SubscriberJourney", "TestHomelab_WalkthroughResolves"}}},
		{"no more shards than tests", []string{"TestOLM_Scorecard"}, 3, [][]string{{"TestOLM_Scorecard"}}},
		{"longest to the least loaded", []string{
			"TestOLM_Scorecard", "TestAKS_InstallJourneyPublishesThroughWorkloadIdentity", "TestChart_HighAvailabilityInPods",
			"TestHomelab_WalkthroughResolves", "TestOLM_SubscriberJourney",
		}, 2, [][]string{
			{"TestAKS_InstallJourneyPublishesThroughWorkloadIdentity", "TestHomelab_WalkthroughResolves", "TestOLM_Scorecard"},
			{"TestOLM_SubscriberJourney", "TestChart_HighAvailabilityInPods"},
		}},
		{"an unknown test counts as the default", []string{"TestNew", "TestOLM_Scorecard", "TestNodeWorld_SchedulesPodsOnBothNodes"}, 2,
			[][]string{{"TestNew"}, {"TestOLM_Scorecard", "TestNodeWorld_SchedulesPodsOnBothNodes"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := spread(tc.tests, tc.n); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("spread(%v, %d) = %v, want %v", tc.tests, tc.n, got, tc.want)
			}
		})
	}
}

func TestProgressLines(t *testing.T) {
	for line, want := range map[string]bool{
		"=== RUN   TestOLM_Scorecard":                            true,
		"--- PASS: TestOLM_Scorecard (18.20s)":                   true,
		"    --- FAIL: TestOLM_InstallModes/OwnNamespace (1.0s)": false,
		"--- FAIL: TestOLM_InstallModes (112.00s)":               true,
		"    olm_test.go:12: === RUN TestX in a log line":        false,
		"PASS": false,
	} {
		if got := progress.MatchString(line); got != want {
			t.Errorf("progress(%q) = %v, want %v", line, got, want)
		}
	}
}

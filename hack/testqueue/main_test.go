package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func names(tests []test) []string {
	var out []string
	for _, t := range tests {
		out = append(out, t.name)
	}
	return out
}

func TestInOrder_LongestExpectedFirstUnknownAmongTheLong(t *testing.T) {
	tests := []test{
		{name: "TestOLM_Scorecard"}, {name: "TestNew"}, {name: "TestAKS_InstallJourneyPublishesThroughWorkloadIdentity"},
		{name: "TestHomelab_WalkthroughResolves"}, {name: "TestOther"},
	}
	want := []string{"TestAKS_InstallJourneyPublishesThroughWorkloadIdentity", "TestNew", "TestOther",
		"TestHomelab_WalkthroughResolves", "TestOLM_Scorecard"}
	if got := names(inOrder(tests)); !reflect.DeepEqual(got, want) {
		t.Errorf("inOrder = %v, want %v", got, want)
	}
}

// The queue never runs more than its workers at once, runs every test once, and keeps them busy:
// six 200 ms tests on three workers take two rounds, not six. Each test's process appends "+" to a
// file when it starts and "-" when it ends, so the file's lines tell how many ran at once.
func TestRunQueue_AtMostWorkersAtOnceEveryTestOnce(t *testing.T) {
	log := filepath.Join(t.TempDir(), "log")
	var mu sync.Mutex
	ran := map[string]int{}
	tests := []test{{name: "T1"}, {name: "T2"}, {name: "T3"}, {name: "T4"}, {name: "T5"}, {name: "T6"}}
	start := time.Now()
	results := runQueue(tests, 3, nil, func(tc test) *exec.Cmd {
		mu.Lock()
		ran[tc.name]++
		mu.Unlock()
		return exec.Command("sh", "-c", "echo + >>"+log+"; sleep 0.2; echo - >>"+log)
	})
	took := time.Since(start)
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	running, most := 0, 0
	for _, line := range strings.Fields(string(data)) {
		if line == "+" {
			running++
		} else {
			running--
		}
		most = max(most, running)
	}
	if most > 3 || most < 2 {
		t.Errorf("%d tests ran at once, want at most 3 and more than one", most)
	}
	if len(results) != 6 || len(ran) != 6 {
		t.Fatalf("results %d, tests run %v: want every test once", len(results), ran)
	}
	for name, n := range ran {
		if n != 1 {
			t.Errorf("%s ran %d times", name, n)
		}
	}
	if took > 1200*time.Millisecond {
		t.Errorf("six 200 ms tests on three workers took %s: the workers did not run side by side", took)
	}
}

func TestRunQueue_AFailedTestIsReportedAndTheOthersStillRun(t *testing.T) {
	tests := []test{{name: "TestBad"}, {name: "TestGood"}}
	results := runQueue(tests, 1, nil, func(tc test) *exec.Cmd {
		if tc.name == "TestBad" {
			return exec.Command("sh", "-c", "echo '--- FAIL: TestBad (0.00s)'; exit 1")
		}
		return exec.Command("true")
	})
	if results[0].err == nil || results[1].err != nil {
		t.Fatalf("results = %+v, want TestBad failed and TestGood passed", results)
	}
	if s := summary(results, 1, time.Second); !strings.Contains(s, "FAIL") || !strings.Contains(s, "2 tests, 1 failed") {
		t.Errorf("summary does not name the failure:\n%s", s)
	}
}

func TestSplitArgs(t *testing.T) {
	suites, extra := splitArgs([]string{"test/e2e=bin/e2e.test", "test/node=bin/node.test", "--", "-test.failfast"})
	if !reflect.DeepEqual(suites, []string{"test/e2e=bin/e2e.test", "test/node=bin/node.test"}) || !reflect.DeepEqual(extra, []string{"-test.failfast"}) {
		t.Errorf("splitArgs = %v, %v", suites, extra)
	}
	if suites, extra := splitArgs([]string{"test/e2e=bin/e2e.test"}); len(suites) != 1 || extra != nil {
		t.Errorf("splitArgs without -- = %v, %v", suites, extra)
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

// A suite's cap holds its tests back while the other suite's fill the workers: four node tests
// and two end-to-end tests on three workers, at most one node test at a time, the node tests
// listed first: never two node tests at once, and the end-to-end tests start beside the first
// node test instead of after every node test.
func TestRunQueue_ASuitesCapLetsTheOtherSuiteFillTheWorkers(t *testing.T) {
	log := filepath.Join(t.TempDir(), "log")
	tests := []test{{dir: "node", name: "N1"}, {dir: "node", name: "N2"}, {dir: "node", name: "N3"}, {dir: "node", name: "N4"},
		{dir: "e2e", name: "E1"}, {dir: "e2e", name: "E2"}}
	runQueue(tests, 3, map[string]int{"node": 1}, func(tc test) *exec.Cmd {
		return exec.Command("sh", "-c", "echo +"+tc.dir+" >>"+log+"; sleep 0.1; echo -"+tc.dir+" >>"+log)
	})
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	running := map[string]int{}
	most := map[string]int{}
	firstE2E := -1
	lines := strings.Fields(string(data))
	for i, line := range lines {
		dir := line[1:]
		if line[0] == '+' {
			running[dir]++
			if dir == "e2e" && firstE2E < 0 {
				firstE2E = i
			}
		} else {
			running[dir]--
		}
		most[dir] = max(most[dir], running[dir])
	}
	if most["node"] != 1 {
		t.Errorf("%d node tests ran at once, want 1 (the cap)", most["node"])
	}
	if firstE2E > 2 {
		t.Errorf("the first end-to-end test started at line %d of %q: it waited for node tests instead of filling a worker", firstE2E, lines)
	}
}

func TestParseCaps(t *testing.T) {
	if caps, err := parseCaps("test/node=2,test/e2e=3"); err != nil || caps["test/node"] != 2 || caps["test/e2e"] != 3 {
		t.Errorf("parseCaps = %v, %v", caps, err)
	}
	for _, bad := range []string{"test/node", "test/node=0", "test/node=x"} {
		if _, err := parseCaps(bad); err == nil {
			t.Errorf("parseCaps(%q) took it", bad)
		}
	}
}

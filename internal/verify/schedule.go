package verify

import "time"

// Settings tune when records are checked.
type Settings struct {
	// FastInterval is the first retry after a change (or after a check that found the record not
	// published); each further retry waits twice as long, up to SettledInterval.
	FastInterval time.Duration
	// SettledInterval is how often a published record is checked again (±10 % jitter, so that
	// checks of records published together spread out).
	SettledInterval time.Duration
	// FailuresBeforeUnreachable is how many checks in a row must get no answer before a zone is
	// reported Unreachable; shorter outages change nothing.
	FailuresBeforeUnreachable int
	// InitialPace is the time between two first checks, in one zone, of the records found when
	// verification starts (the operator starting or taking over leadership, a zone's verification
	// being configured): a few records are checked at once, thousands at a pace the name server
	// does not notice. Until its first check a record keeps the state its status shows.
	InitialPace time.Duration
	// InitialSpread bounds that wait: the records a zone's pace cannot reach within it are checked
	// at random times within it.
	InitialSpread time.Duration
	// SummaryInterval is how often each zone's routes are counted by state for the
	// DNSConfiguration's status (the counts change with every check, too often to write each).
	SummaryInterval time.Duration
}

// DefaultSettings check a change after 1 s, 2 s, 4 s … and a settled record every 5 minutes.
var DefaultSettings = Settings{
	FastInterval:              time.Second,
	SettledInterval:           5 * time.Minute,
	FailuresBeforeUnreachable: 3,
	InitialPace:               20 * time.Millisecond,
	InitialSpread:             time.Minute,
	SummaryInterval:           30 * time.Second,
}

func (s Settings) withDefaults() Settings {
	if s.FastInterval <= 0 {
		s.FastInterval = DefaultSettings.FastInterval
	}
	if s.SettledInterval <= 0 {
		s.SettledInterval = DefaultSettings.SettledInterval
	}
	if s.SettledInterval < s.FastInterval {
		s.SettledInterval = s.FastInterval
	}
	if s.FailuresBeforeUnreachable <= 0 {
		s.FailuresBeforeUnreachable = DefaultSettings.FailuresBeforeUnreachable
	}
	if s.InitialPace <= 0 {
		s.InitialPace = DefaultSettings.InitialPace
	}
	if s.InitialSpread < 0 {
		s.InitialSpread = 0
	}
	if s.SummaryInterval <= 0 {
		s.SummaryInterval = DefaultSettings.SummaryInterval
	}
	return s
}

// WithDefaults fills the settings left zero with DefaultSettings.
func (s Settings) WithDefaults() Settings { return s.withDefaults() }

// NextCheck is the delay before the next check of a record after a check at attempt (checks
// since the record last changed or was last found published), and whether that next check is
// urgent (checked before settled records that are due). published says the check found the
// record published; jitter is a random number in [0, 1).
func NextCheck(s Settings, attempt int, published bool, jitter float64) (delay time.Duration, urgent bool) {
	s = s.withDefaults()
	spread := func(d time.Duration) time.Duration { return time.Duration(float64(d) * (0.9 + 0.2*jitter)) }
	if published {
		return spread(s.SettledInterval), false
	}
	delay = s.SettledInterval
	if attempt < 32 { // beyond, the shift overflows; the interval is long settled by then
		delay = min(s.FastInterval<<attempt, s.SettledInterval)
	}
	return spread(delay), delay < s.SettledInterval
}

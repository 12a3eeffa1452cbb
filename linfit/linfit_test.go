package linfit

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

func TestTQuantile(t *testing.T) {
	// Two-sided 95% critical values from the t table.
	for _, c := range []struct{ df, want float64 }{
		{1, 12.706}, {2, 4.303}, {3, 3.182}, {5, 2.571}, {10, 2.228}, {30, 2.042}, {1000, 1.962},
	} {
		if got := TQuantile(0.975, c.df); math.Abs(got-c.want) > 0.001 {
			t.Errorf("t(0.975, %v) = %.4f, want %.3f", c.df, got, c.want)
		}
	}
	if got := TQuantile(0.025, 5); math.Abs(got+2.571) > 0.001 {
		t.Errorf("t(0.025, 5) = %.4f, want -2.571", got)
	}
}

func TestFitExact(t *testing.T) {
	l, err := Fit([]float64{0, 1, 2, 3}, []float64{5, 7, 9, 11})
	if err != nil {
		t.Fatal(err)
	}
	if l.Slope != 2 || l.Intercept != 5 || l.SlopeSE != 0 || l.R2 != 1 {
		t.Errorf("fit %+v, want slope 2, intercept 5, no error, R² 1", l)
	}
}

// TestFitKnownNoise fits many noisy samples of a known line: the 95% interval of the slope holds
// the true slope about 95% of the time, and the fitted slopes scatter as SlopeSE says.
func TestFitKnownNoise(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const trials, slope, intercept, noise = 2000, 1.02, 50.0, 3.0
	x := []float64{0, 0, 0, 10, 10, 10, 20, 20, 20, 40, 40, 40}
	covered := 0
	var sum, sumSq, seSum float64
	for range trials {
		y := make([]float64, len(x))
		for i := range x {
			y[i] = intercept + slope*x[i] + noise*rng.NormFloat64()
		}
		l, err := Fit(x, y)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(l.Slope-slope) <= l.SlopeCI(0.95) {
			covered++
		}
		sum += l.Slope
		sumSq += l.Slope * l.Slope
		seSum += l.SlopeSE
	}
	if rate := float64(covered) / trials; rate < 0.93 || rate > 0.97 {
		t.Errorf("the 95%% interval held the true slope in %.1f%% of trials", 100*rate)
	}
	mean := sum / trials
	sd := math.Sqrt(sumSq/trials - mean*mean)
	if math.Abs(mean-slope) > 0.01 {
		t.Errorf("mean slope %.4f, want %.2f", mean, slope)
	}
	if se := seSum / trials; math.Abs(se-sd)/sd > 0.1 {
		t.Errorf("mean SlopeSE %.4f, slopes' spread %.4f", se, sd)
	}
}

func TestFitTooFew(t *testing.T) {
	for _, c := range []struct{ x, y []float64 }{
		{[]float64{1, 2}, []float64{1, 2}},
		{[]float64{1, 1, 1}, []float64{1, 2, 3}},
	} {
		if _, err := Fit(c.x, c.y); !errors.Is(err, ErrTooFew) {
			t.Errorf("Fit(%v, %v): %v, want ErrTooFew", c.x, c.y, err)
		}
	}
}

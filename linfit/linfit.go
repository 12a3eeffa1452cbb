// Package linfit fits a straight line by least squares and says how sure the fit is: the slope's
// standard error and t-based confidence interval, R², the interval of a prediction. It imports
// nothing of the project's.
package linfit

import (
	"errors"
	"math"
)

// Line is y = Intercept + Slope·x fitted to N points.
type Line struct {
	N         int     `json:"n"`
	Slope     float64 `json:"slope"`
	Intercept float64 `json:"intercept"`
	// SlopeSE and InterceptSE are the standard errors, from the residuals' variance.
	SlopeSE     float64 `json:"slope_se"`
	InterceptSE float64 `json:"intercept_se"`
	// R2 is the share of y's variance the line explains; 1 when y does not vary and the line fits.
	R2 float64 `json:"r2"`
	// ResidualSD is the residuals' standard deviation, sqrt(SSE / (N-2)).
	ResidualSD float64 `json:"residual_sd"`
}

// ErrTooFew is the error of a fit to fewer than three points, or to points whose x are all equal:
// no slope, or no error of it.
var ErrTooFew = errors.New("a line needs three points or more, at two x values or more")

// Fit fits a line to the points (x[i], y[i]) by ordinary least squares.
func Fit(x, y []float64) (Line, error) {
	n := len(x)
	if n != len(y) {
		return Line{}, errors.New("x and y differ in length")
	}
	if n < 3 {
		return Line{}, ErrTooFew
	}
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx /= float64(n)
	my /= float64(n)
	var sxx, sxy, syy float64
	for i := range x {
		dx, dy := x[i]-mx, y[i]-my
		sxx += dx * dx
		sxy += dx * dy
		syy += dy * dy
	}
	if sxx == 0 {
		return Line{}, ErrTooFew
	}
	l := Line{N: n}
	l.Slope = sxy / sxx
	l.Intercept = my - l.Slope*mx
	var sse float64
	for i := range x {
		r := y[i] - l.Intercept - l.Slope*x[i]
		sse += r * r
	}
	s2 := sse / float64(n-2)
	l.ResidualSD = math.Sqrt(s2)
	l.SlopeSE = math.Sqrt(s2 / sxx)
	l.InterceptSE = math.Sqrt(s2 * (1/float64(n) + mx*mx/sxx))
	l.R2 = 1
	if syy > 0 {
		l.R2 = 1 - sse/syy
	}
	return l, nil
}

// T is the two-sided critical value of Student's t for a confidence level (0.95) with the fit's
// N-2 degrees of freedom.
func (l Line) T(level float64) float64 {
	return TQuantile(1-(1-level)/2, float64(l.N-2))
}

// SlopeCI is the half-width of the slope's confidence interval at level.
func (l Line) SlopeCI(level float64) float64 { return l.T(level) * l.SlopeSE }

// TQuantile is the p quantile of Student's t with df degrees of freedom (df > 0, 0 < p < 1).
func TQuantile(p, df float64) float64 {
	if p == 0.5 {
		return 0
	}
	if p < 0.5 {
		return -TQuantile(1-p, df)
	}
	lo, hi := 0.0, 1.0
	for tCDF(hi, df) < p {
		hi *= 2
		if hi > 1e12 {
			return math.Inf(1)
		}
	}
	for range 200 {
		mid := (lo + hi) / 2
		if tCDF(mid, df) < p {
			lo = mid
		} else {
			hi = mid
		}
		if hi-lo < 1e-12*hi {
			break
		}
	}
	return (lo + hi) / 2
}

// tCDF is Student's t distribution function at t ≥ 0.
func tCDF(t, df float64) float64 {
	return 1 - 0.5*betaInc(df/2, 0.5, df/(df+t*t))
}

// betaInc is the regularized incomplete beta function I_x(a, b) (Numerical Recipes' betai).
func betaInc(a, b, x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	la, _ := math.Lgamma(a + b)
	lb, _ := math.Lgamma(a)
	lc, _ := math.Lgamma(b)
	front := math.Exp(la - lb - lc + a*math.Log(x) + b*math.Log(1-x))
	if x < (a+1)/(a+b+2) {
		return front * betaCF(a, b, x) / a
	}
	return 1 - front*betaCF(b, a, 1-x)/b
}

// betaCF is the continued fraction of the incomplete beta function, by Lentz's method.
func betaCF(a, b, x float64) float64 {
	const tiny = 1e-300
	nonZero := func(v float64) float64 {
		if math.Abs(v) < tiny {
			return tiny
		}
		return v
	}
	qab, qap, qam := a+b, a+1, a-1
	c, d := 1.0, 1/nonZero(1-qab*x/qap)
	h := d
	// step takes one term aa of the fraction and returns its factor of h.
	step := func(aa float64) float64 {
		d = 1 / nonZero(1+aa*d)
		c = nonZero(1 + aa/c)
		return d * c
	}
	for m := 1; m <= 300; m++ {
		fm := float64(m)
		m2 := 2 * fm
		h *= step(fm * (b - fm) * x / ((qam + m2) * (a + m2)))
		del := step(-(a + fm) * (qab + fm) * x / ((a + m2) * (qap + m2)))
		h *= del
		if math.Abs(del-1) < 3e-14 {
			break
		}
	}
	return h
}

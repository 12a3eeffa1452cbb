package report

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/lockspec"
)

// Every built-in lock type has a colour of its own, so that no two of them look alike in a chart.
func TestBuiltinTypeColors(t *testing.T) {
	spec, err := lockspec.Default()
	if err != nil {
		t.Fatal(err)
	}
	owner := map[string]string{}
	for _, name := range spec.Names() {
		c, ok := builtinTypeColors[name]
		if !ok {
			t.Errorf("built-in type %s has no fixed colour", name)
			continue
		}
		if other, taken := owner[c]; taken {
			t.Errorf("%s and %s share the colour %s", other, name, c)
		}
		owner[c] = name
		if slices.Contains(otherTypeColors, c) {
			t.Errorf("%s's colour %s is also one of the types lockspec does not know", name, c)
		}
	}
	if len(builtinTypeColors) != len(spec.Names()) {
		t.Errorf("%d fixed colours for %d built-in types: a colour names a type that is not built in", len(builtinTypeColors), len(spec.Names()))
	}
}

// A type's colour depends on its name alone: not on the other types of a capture, nor on its rank.
func TestTypeColorIgnoresOrder(t *testing.T) {
	hist := func(typ string, totalNS uint64) capture.Histogram {
		return capture.Histogram{Type: typ, Count: 1, TotalNS: totalNS, SubBucketBits: capture.SubBucketBits}
	}
	colors := func(hists ...capture.Histogram) map[string]string {
		m := map[string]string{}
		for _, s := range summarizeTypes(hists) {
			m[s.Name] = s.Color
		}
		return m
	}
	first := colors(hist("spinlock", 10), hist("mutex", 5), hist("my_lock", 1))
	second := colors(hist("mutex", 50), hist("my_lock", 20), hist("spinlock", 1), hist("rwsem:W", 7))
	for _, name := range []string{"spinlock", "mutex", "my_lock"} {
		if first[name] != second[name] {
			t.Errorf("%s is %s in one capture and %s in the other", name, first[name], second[name])
		}
	}
	if c := typeColor("my_lock"); !slices.Contains(otherTypeColors, c) || c != typeColor("my_lock") {
		t.Errorf("typeColor(my_lock) = %s, not a stable colour of the palette", c)
	}
}

// TestTypeColorsApart: every two colours of the palette, the built-in types' and the others', differ
// by minTypeColorDistance in CIEDE2000, and a reader's variant is a lighter shade of its writer's.
func TestTypeColorsApart(t *testing.T) {
	names := slices.Sorted(maps.Keys(builtinTypeColors))
	colors := map[string]string{}
	for _, n := range names {
		colors[n] = builtinTypeColors[n]
	}
	for i, c := range otherTypeColors {
		colors[fmt.Sprintf("other %d", i)] = c
		names = append(names, fmt.Sprintf("other %d", i))
	}
	for i, a := range names {
		for _, b := range names[i+1:] {
			if d := ciede2000(labOf(t, colors[a]), labOf(t, colors[b])); d < minTypeColorDistance {
				t.Errorf("%s (%s) and %s (%s) are %.1f apart in CIEDE2000, under %d", a, colors[a], b, colors[b], d, minTypeColorDistance)
			}
		}
	}
	for _, n := range names {
		writer, ok := strings.CutSuffix(n, ":R")
		if !ok {
			continue
		}
		r, w := labOf(t, colors[n]), labOf(t, colors[writer+":W"])
		if r[0] < w[0]+20 {
			t.Errorf("%s (lightness %.0f) is not a light shade of %s:W (%.0f)", n, r[0], writer, w[0])
		}
		if _, striped := typeItemStyle(n)["decal"]; !striped {
			t.Errorf("%s has no stripes", n)
		}
		if _, striped := typeItemStyle(writer + ":W")["decal"]; striped {
			t.Errorf("%s:W has stripes", writer)
		}
	}
}

// TestCIEDE2000 checks the distance against pairs of the published test data of Sharma, Wu and
// Dalal, "The CIEDE2000 color-difference formula" (2005), table 1.
func TestCIEDE2000(t *testing.T) {
	for _, c := range []struct {
		a, b [3]float64
		want float64
	}{
		{[3]float64{50, 2.6772, -79.7751}, [3]float64{50, 0, -82.7485}, 2.0425},
		{[3]float64{50, -1.3802, -84.2814}, [3]float64{50, 0, -82.7485}, 1.0000},
		{[3]float64{50, 0, 0}, [3]float64{50, -1, 2}, 2.3669},
		{[3]float64{50, 2.5, 0}, [3]float64{73, 25, -18}, 27.1492},
		{[3]float64{60.2574, -34.0099, 36.2677}, [3]float64{60.4626, -34.1751, 39.4387}, 1.2644},
		{[3]float64{22.7233, 20.0904, -46.6940}, [3]float64{23.0331, 14.9730, -42.5619}, 2.0373},
		{[3]float64{90.9257, -0.5406, -0.9208}, [3]float64{88.6381, -0.8985, -0.7239}, 1.5381},
	} {
		if got := ciede2000(c.a, c.b); math.Abs(got-c.want) > 1e-4 {
			t.Errorf("ciede2000(%v, %v) = %.4f, want %.4f", c.a, c.b, got, c.want)
		}
	}
}

// labOf is the CIELAB (D65) of an sRGB colour "#rrggbb".
func labOf(t *testing.T, hex string) [3]float64 {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimPrefix(hex, "#"), 16, 32)
	if err != nil || len(hex) != 7 {
		t.Fatalf("colour %q is not #rrggbb", hex)
	}
	var lin [3]float64
	for i := range lin {
		c := float64(v>>(16-8*i)&0xff) / 255
		if c <= 0.04045 {
			lin[i] = c / 12.92
		} else {
			lin[i] = math.Pow((c+0.055)/1.055, 2.4)
		}
	}
	x := (0.4124564*lin[0] + 0.3575761*lin[1] + 0.1804375*lin[2]) / 0.95047
	y := 0.2126729*lin[0] + 0.7151522*lin[1] + 0.0721750*lin[2]
	z := (0.0193339*lin[0] + 0.1191920*lin[1] + 0.9503041*lin[2]) / 1.08883
	f := func(t float64) float64 {
		if t > 216.0/24389 {
			return math.Cbrt(t)
		}
		return (24389.0/27*t + 16) / 116
	}
	return [3]float64{116*f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))}
}

// ciede2000 is the CIEDE2000 colour difference of two CIELAB colours, as Sharma, Wu and Dalal
// state it.
func ciede2000(l1, l2 [3]float64) float64 {
	rad, deg := math.Pi/180, 180/math.Pi
	c1, c2 := math.Hypot(l1[1], l1[2]), math.Hypot(l2[1], l2[2])
	cb7 := math.Pow((c1+c2)/2, 7)
	g := 0.5 * (1 - math.Sqrt(cb7/(cb7+math.Pow(25, 7))))
	a1, a2 := (1+g)*l1[1], (1+g)*l2[1]
	c1p, c2p := math.Hypot(a1, l1[2]), math.Hypot(a2, l2[2])
	hue := func(b, a float64) float64 {
		if a == 0 && b == 0 {
			return 0
		}
		return math.Mod(math.Atan2(b, a)*deg+360, 360)
	}
	h1, h2 := hue(l1[2], a1), hue(l2[2], a2)
	dL, dC := l2[0]-l1[0], c2p-c1p
	dh := 0.0
	if c1p*c2p != 0 {
		dh = h2 - h1
		if dh > 180 {
			dh -= 360
		} else if dh < -180 {
			dh += 360
		}
	}
	dH := 2 * math.Sqrt(c1p*c2p) * math.Sin(dh/2*rad)
	lb, cb := (l1[0]+l2[0])/2, (c1p+c2p)/2
	hb := h1 + h2
	switch {
	case c1p*c2p == 0:
	case math.Abs(h1-h2) <= 180:
		hb /= 2
	case h1+h2 < 360:
		hb = (hb + 360) / 2
	default:
		hb = (hb - 360) / 2
	}
	tt := 1 - 0.17*math.Cos((hb-30)*rad) + 0.24*math.Cos(2*hb*rad) + 0.32*math.Cos((3*hb+6)*rad) - 0.20*math.Cos((4*hb-63)*rad)
	dTheta := 30 * math.Exp(-math.Pow((hb-275)/25, 2))
	cb7p := math.Pow(cb, 7)
	rc := 2 * math.Sqrt(cb7p/(cb7p+math.Pow(25, 7)))
	sl := 1 + 0.015*(lb-50)*(lb-50)/math.Sqrt(20+(lb-50)*(lb-50))
	sc, sh := 1+0.045*cb, 1+0.015*cb*tt
	rt := -math.Sin(2*dTheta*rad) * rc
	return math.Sqrt(math.Pow(dL/sl, 2) + math.Pow(dC/sc, 2) + math.Pow(dH/sh, 2) + rt*(dC/sc)*(dH/sh))
}

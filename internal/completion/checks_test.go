package completion

import "testing"

// The real call stops at its first refusal, so every step it runs had every earlier one pass: a
// step may need only earlier steps, or the dry run would judge one the call could not reach (or
// skip one the call runs). The admission steps run after Open's, so they come last.
func TestStepsNeedOnlyEarlierSteps(t *testing.T) {
	admission := false
	for i, st := range steps {
		if st.run == nil {
			t.Errorf("step %d has nothing to run", i)
		}
		if st.needs>>i != 0 {
			t.Errorf("step %d needs itself or a later step (needs %b)", i, st.needs)
		}
		if admission && !st.admission {
			t.Errorf("step %d runs at Open after an admission step", i)
		}
		admission = admission || st.admission
	}
}

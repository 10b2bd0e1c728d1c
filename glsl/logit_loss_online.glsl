// logit_loss_online.glsl — the online logsumexp of the losses over a
// vocabulary in slices (logit_loss_stats.comp).
//
// A partial state is (m, s): the largest value seen and Σ exp(value − m)
// over the values seen, m = −∞ and s = 0 before any. The KL's teacher adds
// d = Σ exp(a − m)·(a − b), rescaled with s. Every operation is `precise`
// (rounded on its own, never fused), and the student's and the teacher's
// states go through the same functions, so equal logits give equal bits
// (the KL of a student against itself is exactly 0).
#ifndef VKBLR_LOGIT_LOSS_ONLINE_GLSL
#define VKBLR_LOGIT_LOSS_ONLINE_GLSL

// s·exp(m_old − m_new); exactly s where m_old = m_new (both −∞ included,
// where the exponent would be NaN).
float ll_rescale(float s, float m_old, float m_new) {
  if (m_old == m_new) return s;
  precise float r = s * exp(m_old - m_new);
  return r;
}

// Adds value x (with weight diff for d) to (m, s, d). A NaN x makes s NaN.
void ll_add(inout float m, inout float s, inout float d, float x, float diff) {
  if (x > m) {
    precise const float r = exp(m - x);
    precise const float s1 = s * r + 1.0;
    precise const float d1 = d * r + diff;
    s = s1;
    d = d1;
    m = x;
  } else {
    precise const float e = exp(x - m);
    precise const float s1 = s + e;
    precise const float d1 = d + e * diff;
    s = s1;
    d = d1;
  }
}

// (m1, s1, d1) ⊕ (m2, s2, d2) into the first.
void ll_merge(inout float m1, inout float s1, inout float d1, float m2, float s2, float d2) {
  const float m = max(m1, m2);
  precise const float s = ll_rescale(s1, m1, m) + ll_rescale(s2, m2, m);
  precise const float d = ll_rescale(d1, m1, m) + ll_rescale(d2, m2, m);
  m1 = m;
  s1 = s;
  d1 = d;
}

#endif

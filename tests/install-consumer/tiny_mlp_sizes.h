// The tiny MLP's layer sizes: a header the model includes, so that editing it re-exports.
#pragma once

inline constexpr int kInputs = 16;
inline constexpr int kHidden = 32;
inline constexpr int kOutputs = 4;

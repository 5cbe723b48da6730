// A header of depfile.cpp, which the depfile must list.
#pragma once
inline constexpr int kDepfileWidth = 4;

// The model DSL: include this in a model file.
#ifndef AOTC_AOTC_H
#define AOTC_AOTC_H

#include "aotc/Functional.h"
#include "aotc/Model.h"
#include "aotc/Tensor.h"
#include "aotc/nn/Module.h"
#include "aotc/nn/Modules.h"

#endif

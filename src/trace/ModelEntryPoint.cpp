// main() of compiled model programs: linked with the user's model file, which defines
// aotcDefineModel() through AOTC_MODEL.
#include "aotc/Model.h"

namespace aotc {
int modelMain(int argc, char **argv, ModelDecl (*define)());
} // namespace aotc

int main(int argc, char **argv) { return aotc::modelMain(argc, argv, &aotcDefineModel); }

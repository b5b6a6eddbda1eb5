// libyaml (Debian: libyaml-dev): the YAML parser PyYAML's C loader and Yams are built on.
#include <yaml.h>

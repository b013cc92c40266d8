package sqlitepersist

import ()

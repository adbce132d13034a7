//! Default sandbox profiles used by `runsbx gen`. (Being written.)

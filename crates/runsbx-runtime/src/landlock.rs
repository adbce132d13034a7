//! Landlock enforcement inside the container's init. (Being written.)

//! Newtype IDs that index the vectors of a [`crate::Cluster`].

use serde::Serialize;

macro_rules! id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
        pub struct $name(pub u32);

        impl $name {
            /// The position of this item in its vector.
            #[inline]
            pub fn index(self) -> usize {
                self.0 as usize
            }

            /// The ID of the item at `index`; panics only if the index exceeds `u32`, which the
            /// size limits of the builders rule out.
            #[inline]
            pub fn from_index(index: usize) -> Self {
                Self(u32::try_from(index).expect("index fits in u32"))
            }
        }
    };
}

id!(
    /// A host (Kubernetes node) in [`crate::Cluster::nodes`].
    NodeId
);
id!(
    /// A switch in [`crate::Cluster::switches`].
    SwitchId
);
id!(
    /// A cable (full duplex) in [`crate::Cluster::links`].
    LinkId
);
id!(
    /// A locality domain (one label value under its parent) in [`crate::Cluster::domains`].
    DomainId
);
id!(
    /// A set of GPUs joined by NVLink in [`crate::Cluster::nvlink_domains`].
    NvlinkDomainId
);

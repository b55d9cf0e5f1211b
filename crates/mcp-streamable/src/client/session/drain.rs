//! What the client's observed drain hands out ([`ClientOutput`]). The
//! drain itself, `ClientSession::drain_observed`, is what every loop
//! around a client core does after each input (the hyper client shell,
//! the checker's world, the fuzz target): transmits first (a request goes
//! out before the events it caused are acted on), then events, again until
//! neither has anything; each shown to the observer, as client `client`,
//! before `handle` gets it (with the observer, for what it observes
//! itself), and `handle` may feed the session again.

use crate::client::{ClientEvent, ClientTransmit};
use crate::observe::Observation;

/// One output of the client core.
#[derive(Clone, Debug)]
pub enum ClientOutput {
    /// Something for the wire: a request to send, an exchange to abort.
    Transmit(ClientTransmit),
    /// Something for the application.
    Event(ClientEvent),
}

impl ClientOutput {
    /// Shows this output to `observe` as client `client`'s observation
    /// (`ClientTransmit` or `ClientEvent`), then gives it back: observed by
    /// reference, then moved on, with no copy of a body.
    pub fn observed(self, client: usize, observe: &mut dyn FnMut(&Observation)) -> Self {
        let o = match self {
            ClientOutput::Transmit(transmit) => Observation::ClientTransmit { client, transmit },
            ClientOutput::Event(event) => Observation::ClientEvent { client, event },
        };
        observe(&o);
        match o {
            Observation::ClientTransmit { transmit, .. } => ClientOutput::Transmit(transmit),
            Observation::ClientEvent { event, .. } => ClientOutput::Event(event),
            _ => unreachable!("built as one of the two just above"),
        }
    }
}

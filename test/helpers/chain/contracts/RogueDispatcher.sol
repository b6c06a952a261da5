// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.20;

import {CctpV2TransmitterStandIn} from "./CctpV2TransmitterStandIn.sol";

/// @notice A contract that is neither the Mailbox nor the CCTP transmitter but emits events with
/// their exact signatures. A relayer that does not filter logs by emitter address would count and
/// relay these forgeries.
contract RogueDispatcher {
    /// Same signature and indexing as IMailbox.Dispatch.
    event Dispatch(address indexed sender, uint32 indexed destination, bytes32 indexed recipient, bytes message);
    /// Same signature as MessageTransmitterV2.MessageSent.
    event MessageSent(bytes message);

    /// @notice Emits one look-alike Dispatch carrying `message` (a well-formed Hyperlane message
    /// chosen by the caller) and one look-alike MessageSent carrying `cctpMessage`.
    function forge(uint32 destination, bytes32 recipient, bytes calldata message, bytes calldata cctpMessage) public {
        emit MessageSent(cctpMessage);
        emit Dispatch(msg.sender, destination, recipient, message);
    }

    /// @notice The forgeries around one genuine transfer, all in one transaction.
    function forgeAround(
        CctpV2TransmitterStandIn standIn,
        uint32 destination,
        bytes32 recipient,
        uint256 amount,
        bytes calldata message,
        bytes calldata cctpMessage
    ) external {
        forge(destination, recipient, message, cctpMessage);
        standIn.send(destination, recipient, amount, 1, 1);
    }
}

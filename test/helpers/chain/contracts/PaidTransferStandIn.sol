// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.20;

import {CctpV2TransmitterStandIn, IMailbox} from "./CctpV2TransmitterStandIn.sol";

// The one InterchainGasPaymaster entry point used (IInterchainGasPaymaster.sol in the hyperlane-xyz core package).
interface IGasPaymaster {
    function payForGas(
        bytes32 messageId,
        uint32 destinationDomain,
        uint256 gasAmount,
        address refundAddress
    ) external payable;
}

/// @notice A CCTP V2 transfer over Hyperlane (the transmitter stand-in's `send`) that pays the
/// real InterchainGasPaymaster for its message in the same transaction, as a sender that pays for
/// delivery does: `gasAmount` of destination gas for `payDestination` (the message's own
/// destination, or another one to test that it does not count), with `msg.value` (the IGP's
/// quote; the rest is refunded to the caller). `gasAmount` 0 pays nothing.
contract PaidTransferStandIn is CctpV2TransmitterStandIn {
    constructor(
        IMailbox _mailbox,
        uint32 _cctpLocalDomain,
        uint32 _cctpRemoteDomain,
        bytes32 _remoteTokenMessenger
    ) CctpV2TransmitterStandIn(_mailbox, _cctpLocalDomain, _cctpRemoteDomain, _remoteTokenMessenger) {}

    function sendPaid(
        uint32 destination,
        bytes32 recipient,
        uint256 amount,
        IGasPaymaster igp,
        uint32 payDestination,
        uint256 gasAmount
    ) external payable returns (bytes32 id) {
        id = send(destination, recipient, amount, 1, 1)[0];
        if (gasAmount > 0) igp.payForGas{value: msg.value}(id, payDestination, gasAmount, msg.sender);
    }
}
